//! The simulated kernel: the allocator state plus the tasks whose memory it tracks.
//!
//! `Kernel` is what a workload program sees when it runs a step: it owns the
//! page allocator ([`Mm`]), the slab caches, and every task's memory
//! (kernel/fork.c and kernel/exit.c in the small: a kernel stack on creation,
//! anonymous memory and page tables while running, everything freed on exit
//! or when the OOM killer picks it).
//!
//! It is the engine's [`Os`]: the engine installs the running task's
//! [`Current`] in `mm.cur` before each action and acts on its requests after.

use crate::block::BlockDevice;
use crate::config::{Cost, Kernel as KernelCfg, Machine};
use crate::engine::{pid_of, Current, Os, TaskId};
use crate::mm::filemap::Inode;
use crate::mm::gfp::{Gfp, GFP_KERNEL};
use crate::mm::memory::BioKind;
use crate::mm::page::{PageKind, Pfn};
use crate::mm::rmap::{Rmap, SlotTable};
use crate::mm::slab::Slab;
use crate::mm::swapfile::SwapInfo;
use crate::mm::vmstat::NodeStat;
use crate::mm::Mm;
use crate::trace::TraceEvent;
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

/// Where a direct reclaimer that went to sleep inside try_to_free_pages resumes.
#[derive(Debug, Clone, Copy)]
pub struct ReclaimResume {
    /// The next priority to scan at.
    pub priority: i32,
    /// Pages reclaimed so far.
    pub nr_reclaimed: u64,
    /// Whether it may write pages by now.
    pub may_writepage: bool,
    /// The allocation's gfp mask.
    pub gfp: Gfp,
    /// The allocation's order.
    pub order: usize,
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
    /// The swap type it is running swapoff on: the OOM killer's first choice meanwhile
    /// (oom_task_origin), and killed, the device goes back on (-EINTR → reinsert_swap_info).
    pub swapoff_type: Option<usize>,
    /// Anonymous memory: page index → slot (the page tables' contents).
    pub pt: SlotTable,
    /// Pages of anonymous address space mapped, [0, vsize).
    pub vsize: u64,
    /// Resident anonymous pages (MM_ANONPAGES).
    pub rss: u64,
    /// Anonymous pages swapped out (MM_SWAPENTS).
    pub swapents: u64,
    /// Page-table pages.
    pub pgtables: Vec<Pfn>,
    /// The group each page table is charged to (NO_MEMCG: none), beside `pgtables`.
    pub pgtables_objcg: Vec<u32>,
    /// Explicit allocations held: (pfn, order).
    pub held: VecDeque<(Pfn, u8)>,
    /// Unmovable slab objects held: (cache, slab id), oldest first.
    pub slab_held: VecDeque<(u16, crate::mm::slab::SlabObj)>,
    /// Kernel stack pages.
    pub kstack: Vec<Pfn>,
    /// Pages in use between the free blocks a `shape_free_lists` op laid out, for this
    /// task's next movable order-0 allocations (mm/free_area_layout.rs).
    pub layout_pool: Vec<Pfn>,
    /// Reclaim passes without progress carried across throttled retries (no_progress_loops).
    pub no_progress_loops: u32,
    /// Direct-reclaim passes of the current high-order allocation so far (V19's highorder_retry).
    pub highorder_passes: u32,
    /// When the task first found the direct-reclaimer limit reached, while it waits.
    pub throttled_since: Option<u64>,
    /// A direct reclaim this task is inside of and sleeping in.
    pub reclaim: Option<ReclaimResume>,
    /// A memcg charge whose limit reclaim slept: where try_charge_memcg's loop resumes.
    pub memcg_charge: Option<crate::mm::memcontrol::ChargeResume>,
    /// Pages charged while a group was over memory.high, to be paid for on the return to
    /// user space (current->memcg_nr_pages_over_high).
    pub memcg_nr_pages_over_high: u64,
    /// When its current direct reclaim began [ns].
    pub reclaim_start: u64,
    /// Pages it holds isolated while asleep inside reclaim: (node, file, pages).
    pub isolated_held: (usize, bool, u64),
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
    /// Reclaim throttled the task: it sleeps (`Current::sleep`) and retries the allocation.
    Retry,
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
    /// Tasks holding pages a `shape_free_lists` op laid out (mm/free_area_layout.rs): the
    /// allocator looks at their pools only while this is not 0.
    pub layout_pools: u32,
    /// The part of the running action's `Current::sleep` that is a throttle [ns]
    /// ([`Os::take_throttle`]).
    pub throttle_ns: u64,
    /// The running kernel path goes on after its sleeps and has no point to resume
    /// from (limit reclaim): they are waited out inside the step (`Current::slept`).
    pub sleep_in_step: bool,
    /// OOM kills that found no victim (the kernel would panic).
    pub oom_no_victim: u64,
    /// The reverse map: task page tables and file page caches.
    pub rmap: Rmap,
    /// The swap area.
    pub swap: SwapInfo,
    /// zswap, the compressed cache in front of swap.
    pub zswap: crate::mm::zswap::Zswap,
    /// The disk (swap at its start, then files).
    pub disk: BlockDevice,
    /// I/O in flight, by request tag.
    pub bios: Vec<Option<BioKind>>,
    /// Free request tags.
    pub free_bios: Vec<u64>,
    /// Latest time the disk has been told of (its clock never goes back) [ns].
    pub io_clock: u64,
    /// Requests waiting for a free request slot of the disk, in order.
    pub pending_reqs: std::collections::VecDeque<crate::block::Request>,
    /// Writes held back by writeback throttling (wbt_wait), in order; reads and other
    /// requests go past them.
    pub wbt_pending: std::collections::VecDeque<crate::block::Request>,
    /// The pages a readahead is adding to a file's cache before it submits their read:
    /// (inode, first index, end index). They are locked (__filemap_add_folio adds them
    /// locked), so reclaim entered from the readahead's own charges passes them by.
    pub ra_locked: Option<(u32, u64, u64)>,
    /// Swap-out pages gathered for one submission (the block plug).
    pub plug: Vec<Pfn>,
    /// Files, by inode number (unlinked ones stay as dead records).
    pub inodes: Vec<Inode>,
    /// Live files by name (the directory).
    pub files: indexmap::IndexMap<String, u32>,
    /// The disk's writeback state and flusher.
    pub wb: crate::mm::page_writeback::BdiWriteback,
    /// Lumpy isolation counts of the last isolate_lru_folios: (taken, dirty, failed).
    pub lumpy_stats: (u64, u64, u64),
    /// Tasks inside direct reclaim, napping ones included (nr_reclaimers).
    pub nr_reclaimers: u64,
    /// The wait queue of tasks held at the reclaimer limit (reclaim_throttle_waitq).
    pub reclaim_wq: usize,
    /// Most direct reclaimers in progress at once.
    pub max_parallel_reclaimers: u64,
    /// Longest single try_to_free_pages, including its naps [ns].
    pub max_try_to_free_pages_ns: u64,
    /// Direct reclaims that waited at the reclaimer limit.
    pub reclaim_throttled: u64,
    /// Waiters that skipped reclaim after a 1 s wait because memory was back.
    pub reclaim_skipped: u64,
    /// Compaction, kcompactd and huge-page fault state.
    pub compact: crate::mm::compaction::CompactState,
    /// Shadow entries evicted page-cache pages left (mm/workingset.c).
    pub shadows: crate::mm::workingset::ShadowTable,
    /// Huge-page faults, fault latencies and MADV_HUGEPAGE marks.
    pub thp: crate::mm::huge_memory::ThpState,
    /// The hugetlb pool of 2 MiB pages.
    pub hstate: crate::mm::hugetlb::Hstate,
    /// AF_UNIX sockets, by id.
    pub sockets: Vec<crate::net::af_unix::UnixSock>,
    /// Figures a workload reports itself (hackbench's "Time:"), by name.
    pub metrics: std::collections::BTreeMap<String, f64>,
    /// /proc files read by `snapshot` operations, in the order they were read.
    pub proc_snapshots: Vec<crate::mm::vmstat::ProcSnapshot>,
    /// Buffer heads and the block device's page cache (fs/buffer.c).
    pub buffers: crate::fs::buffer::Buffers,
    /// The jbd2 journal of the ext4 filesystem.
    pub journal: crate::fs::jbd2::Journal,
    /// The ext4 filesystem's inodes, directories and block groups.
    pub ext4: crate::fs::ext4::Ext4,
    /// XFS's inodes, directories and metadata buffers (fs/xfs.rs).
    pub xfs: crate::fs::xfs::Xfs,
}

/// The engine over this kernel.
pub type Engine = crate::engine::Engine<Kernel>;

impl Kernel {
    /// An engine with this kernel's CPUs, scheduling knobs and context-switch cost.
    pub fn into_engine(self, sched: crate::config::Sched, cost: &Cost) -> Engine {
        let cpu_to_node = self.mm.cpu_to_node.clone();
        Engine::new(self, &cpu_to_node, sched, cost.context_switch)
    }
}

impl Os for Kernel {
    fn current(&mut self) -> &mut Current {
        &mut self.mm.cur
    }

    fn alloc_task_struct(&mut self, comm: &str, cpu: usize, kthread: bool) -> TaskId {
        Kernel::alloc_task_struct(self, comm, cpu, kthread)
    }

    fn copy_process(&mut self, tid: TaskId, now: u64) -> bool {
        Kernel::copy_process(self, tid, now)
    }

    fn set_task_cpu(&mut self, tid: TaskId, cpu: usize) {
        self.tasks[tid as usize].cpu = cpu;
    }

    fn process_io(&mut self, now: u64) {
        Kernel::process_io(self, now)
    }

    fn resume_kernel_work(&mut self, tid: TaskId) -> bool {
        self.resume_direct_reclaim(tid)
    }

    fn exit_to_user_mode(&mut self, tid: TaskId) {
        if self.tasks[tid as usize].memcg_nr_pages_over_high > 0 {
            self.mem_cgroup_handle_over_high(tid);
        }
    }

    fn do_exit(&mut self, tid: TaskId, at: u64) {
        self.blk_finish_plug();
        self.exit_task(tid, at);
    }

    fn account_step(&mut self, tid: TaskId, user_ns: u64, sys_ns: u64) {
        let st = &mut self.tasks[tid as usize].stats;
        st.user_ns += user_ns;
        st.sys_ns += sys_ns;
    }

    fn account_runq_wait(&mut self, tid: TaskId, ns: u64) {
        self.tasks[tid as usize].stats.runq_wait_ns += ns;
    }

    fn set_exit_time(&mut self, tid: TaskId, at: u64) {
        self.tasks[tid as usize].stats.exit_ns = at;
    }

    fn take_throttle(&mut self) -> u64 {
        std::mem::take(&mut self.throttle_ns)
    }
}

/// Starts the kernel's threads (kthreadd's children): the disk's flusher, and per node
/// kswapd and kcompactd, as the kernel config has them.
pub fn start_kthreads(eng: &mut Engine) {
    let kcfg = eng.kernel.mm.kcfg.clone();
    if kcfg.flusher {
        // The disk's flusher thread (a kworker running wb_workfn).
        let wq = eng.new_waitqueue();
        eng.kernel.wb.wq = wq;
        eng.spawn(
            "kworker/u8:0",
            0,
            0,
            true,
            Box::new(crate::mm::page_writeback::Flusher::new()),
        );
    }
    eng.kernel.reclaim_wq = eng.new_waitqueue();
    if kcfg.kswapd {
        for nid in 0..eng.kernel.mm.nodes.len() {
            let wq = eng.new_waitqueue();
            eng.kernel.mm.nodes[nid].kswapd_wait = wq;
            let cpu = eng.kernel.mm.nodes[nid].cpus.first().copied().unwrap_or(0);
            eng.spawn(
                &format!("kswapd{nid}"),
                cpu,
                0,
                true,
                Box::new(crate::mm::vmscan::Kswapd::new(nid)),
            );
        }
    }
    if kcfg.fs == crate::config::Fs::Ext4 && kcfg.ext4_journal {
        // The journal's commit thread, named after its device as jbd2 names it.
        let wq = eng.new_waitqueue();
        eng.kernel.journal.wq = Some(wq);
        eng.spawn(
            "jbd2/vda-8",
            0,
            0,
            true,
            Box::new(crate::fs::jbd2::Kjournald2::default()),
        );
    }
    if kcfg.zswap {
        // The unbound kworker of zswap's shrink_wq, woken when a store finds the pool full.
        let wq = eng.new_waitqueue();
        eng.kernel.zswap.wq = wq;
        eng.spawn(
            "kworker/u8:1",
            0,
            0,
            true,
            Box::new(crate::mm::zswap::ZswapShrinkWorker),
        );
    }
    // The completion wait queue sync(2) sleeps on (made last: earlier queues keep their ids).
    let sync_wq = eng.new_waitqueue();
    eng.kernel.wb.sync_wq = sync_wq;
    // kcompactd runs beside kswapd; a kernel without kswapd (a test of the slow path) has neither.
    if kcfg.kcompactd && kcfg.compaction && kcfg.kswapd {
        for nid in 0..eng.kernel.mm.nodes.len() {
            let wq = eng.new_waitqueue();
            eng.kernel.compact.node(nid).wait = wq;
            let cpu = eng.kernel.mm.nodes[nid].cpus.first().copied().unwrap_or(0);
            eng.spawn(
                &format!("kcompactd{nid}"),
                cpu,
                0,
                true,
                Box::new(crate::mm::compaction::Kcompactd::new(nid)),
            );
        }
    }
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
        Self::boot_with_disk(machine, kcfg, cost, &crate::block::BlockConfig::default())
    }

    /// Boots the kernel on a machine with the given disk.
    pub fn boot_with_disk(
        machine: &Machine,
        kcfg: &KernelCfg,
        cost: &Cost,
        disk: &crate::block::BlockConfig,
    ) -> Kernel {
        Kernel {
            mm: Mm::boot(machine, kcfg, cost),
            slab: Slab::default(),
            tasks: Vec::new(),
            layout_pools: 0,
            throttle_ns: 0,
            sleep_in_step: false,
            oom_no_victim: 0,
            rmap: Rmap::default(),
            swap: SwapInfo::from_config(
                machine.swap.0,
                &[],
                disk.rotational,
                kcfg.rules().swap_slot_cache.then_some(machine.cpus),
            ),
            zswap: crate::mm::zswap::Zswap::new(kcfg),
            disk: BlockDevice::new(disk.clone()),
            bios: Vec::new(),
            free_bios: Vec::new(),
            pending_reqs: Default::default(),
            wbt_pending: Default::default(),
            ra_locked: None,
            io_clock: 0,
            plug: Vec::new(),
            inodes: Vec::new(),
            files: Default::default(),
            wb: crate::mm::page_writeback::BdiWriteback {
                wq: usize::MAX,
                sync_wq: usize::MAX,
                idle: true,
                ..Default::default()
            },
            lumpy_stats: (0, 0, 0),
            nr_reclaimers: 0,
            reclaim_wq: usize::MAX,
            max_parallel_reclaimers: 0,
            max_try_to_free_pages_ns: 0,
            reclaim_throttled: 0,
            reclaim_skipped: 0,
            compact: Default::default(),
            shadows: Default::default(),
            thp: Default::default(),
            hstate: Default::default(),
            sockets: Vec::new(),
            metrics: Default::default(),
            proc_snapshots: Vec::new(),
            buffers: Default::default(),
            journal: Default::default(),
            ext4: Default::default(),
            xfs: Default::default(),
        }
    }

    /// Records a tracepoint hit by the running task at the current time (trace_<event>).
    #[inline]
    pub fn trace(&mut self, ev: TraceEvent) {
        self.mm.trace(ev);
    }

    /// Reserves a task record; the task holds nothing and is not alive until
    /// [`Kernel::copy_process`] (the scheduler and the kernel share task ids).
    pub fn alloc_task_struct(&mut self, comm: &str, cpu: usize, kthread: bool) -> TaskId {
        let tid = self.tasks.len() as TaskId;
        self.tasks.push(TaskStruct {
            pid: pid_of(tid),
            comm: comm.to_string(),
            cpu,
            kthread,
            alive: false,
            oom_killed: false,
            swapoff_type: None,
            pt: SlotTable::default(),
            vsize: 0,
            rss: 0,
            swapents: 0,
            pgtables: Vec::new(),
            pgtables_objcg: Vec::new(),
            held: VecDeque::new(),
            slab_held: VecDeque::new(),
            kstack: Vec::new(),
            layout_pool: Vec::new(),
            no_progress_loops: 0,
            highorder_passes: 0,
            throttled_since: None,
            reclaim: None,
            memcg_charge: None,
            memcg_nr_pages_over_high: 0,
            reclaim_start: 0,
            isolated_held: (0, false, 0),
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
        self.mm.cur.acc += self.mm.cost.fork;
        // The engine creates tasks outside any task's step: nothing may sleep here.
        let atomic = std::mem::replace(&mut self.mm.cur.atomic, true);
        let ok = matches!(self.alloc_thread_stack(tid, tid), AllocResult::Page(_));
        self.mm.cur.atomic = atomic;
        if !ok {
            self.exit_task(tid, now);
        }
        ok
    }

    /// Fork by a running task (copy_process in the parent's context): the child's kernel
    /// stack is allocated as the parent, which may reclaim, be throttled (Retry: call again,
    /// the pages already allocated are kept) or fail. On success the child is alive and
    /// waits for the engine to start it (`Current::start`).
    pub fn copy_process_from(&mut self, parent: TaskId, child: TaskId, now: u64) -> AllocResult {
        let c = child as usize;
        if self.tasks[c].kstack.is_empty() {
            self.mm.cur.acc += self.mm.cost.fork;
        }
        let r = self.alloc_thread_stack(child, parent);
        if !matches!(r, AllocResult::Page(_)) {
            return r;
        }
        self.tasks[c].alive = true;
        self.tasks[c].stats.start_ns = now;
        self.mm.cur.start.push(child);
        AllocResult::Page(crate::mm::page::NIL)
    }

    /// Continues a direct reclaim the task went to sleep in, before it does anything else;
    /// true if it must sleep again.
    pub fn resume_direct_reclaim(&mut self, tid: TaskId) -> bool {
        let Some(r) = self.tasks[tid as usize].reclaim else {
            return false;
        };
        if self.try_to_free_pages(r.gfp, r.order, tid).is_some() {
            self.reclaim_done(tid);
        }
        self.mm.cur.sleep > 0
    }

    /// Allocates what is missing of `task`'s kernel stack, as task `by` (alloc_thread_stack_node);
    /// stops at the first allocation that does not succeed and returns it.
    fn alloc_thread_stack(&mut self, task: TaskId, by: TaskId) -> AllocResult {
        let t = task as usize;
        while (self.tasks[t].kstack.len() as u32) < self.mm.kcfg.kernel_stack_pages {
            match self.alloc_pages(GFP_KERNEL, 0, by) {
                AllocResult::Page(p) => {
                    self.mm.map[p as usize].set_kind(PageKind::KStack);
                    self.mm.map[p as usize].owner = task;
                    self.tasks[t].kstack.push(p);
                    let nid = self.mm.pfn_to_nid(p);
                    self.mm
                        .mod_node_page_state(nid, NodeStat::NR_KERNEL_STACK, 4);
                }
                other => return other,
            }
        }
        AllocResult::Page(crate::mm::page::NIL)
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
        if let Some(st) = self.tasks[t].swapoff_type {
            self.swapoff_end(st, tid, false);
        }
        if self.tasks[t].reclaim.is_some() {
            // Killed while asleep inside direct reclaim.
            self.reclaim_done(tid);
        }
        self.exit_mmap(tid);
        self.shape_free_lists_end(tid);
        let held = std::mem::take(&mut self.tasks[t].held);
        for (p, o) in held {
            self.release_block(p, o as usize, cpu);
        }
        let objs = std::mem::take(&mut self.tasks[t].slab_held);
        for (c, id) in objs {
            self.kmem_cache_free(c as usize, id, cpu);
        }
        let pt = std::mem::take(&mut self.tasks[t].pgtables);
        let objcgs = std::mem::take(&mut self.tasks[t].pgtables_objcg);
        for (p, objcg) in pt.into_iter().zip(objcgs) {
            self.memcg_kmem_uncharge_page(objcg, cpu);
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
        t.rss
            + t.swapents
            + t.pgtables.len() as u64
            + t.held.iter().map(|&(_, o)| 1u64 << o).sum::<u64>()
    }

    /// Host memory the run has added since boot to what grows with use: the frames of free
    /// blocks first used (mm/deferred.rs) and the page tables' slot space [bytes].
    pub fn host_bytes_grown(&self) -> u64 {
        self.mm.frames_written_since_boot() * crate::capacity::BYTES_PER_FRAME
            + self.rmap.host_bytes()
    }

    /// Checks the kernel's invariants (expensive): every frame in exactly one state and
    /// the free counts ([`Mm::check_invariants`]), the LRU lists against their sizes and
    /// counters ([`Mm::check_lru`]), memcg charges against the frames
    /// ([`Kernel::check_memcg`]), and the per-node counters against what tasks hold.
    pub fn check_accounting(&self) -> Result<(), String> {
        self.mm.check_invariants()?;
        self.mm.check_lru()?;
        self.check_memcg()?;
        let anon: u64 = self.tasks.iter().map(|t| t.rss).sum();
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
        // Slab caches' pages, and the pages of the skbs queued on AF_UNIX sockets.
        let slab_pages: u64 = self
            .slab
            .caches
            .iter()
            .map(|c| c.nr_slabs << c.order)
            .sum::<u64>()
            + self
                .sockets
                .iter()
                .map(|s| s.pages.len() as u64)
                .sum::<u64>();
        let counted =
            node_sum(NodeStat::NR_SLAB_RECLAIMABLE) + node_sum(NodeStat::NR_SLAB_UNRECLAIMABLE);
        if counted != slab_pages as i64 {
            return Err(format!(
                "slab counters {counted} but caches and socket buffers hold {slab_pages} pages"
            ));
        }
        Ok(())
    }
}
