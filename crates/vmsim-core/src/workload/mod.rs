//! Workload programs: what simulated tasks do.
//!
//! A program (the engine's [`Program`]) is a resumable state machine: each
//! call of `step` does up to one quantum of work through the kernel and says
//! what the task does next. [`OpProgram`] runs the small instruction set of
//! `[[task]]` tables (compute, touch, unmap, alloc, free, slab, read, write,
//! snapshot, …, see docs/scenarios.md); other workload kinds (hackbench) are
//! registered [`WorkloadSpec`]s with programs of their own.

use crate::config::{AllocType, Op, TaskSpec, Which};
use crate::engine::rng::Stream;
use crate::engine::{Program, Step, StepOut};
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::{Gfp, GFP_ATOMIC, GFP_HIGHUSER_MOVABLE, GFP_KERNEL, GFP_KERNEL_RECLAIMABLE};
use crate::mm::hugetlb::Resize;
use crate::mm::memory::Fault;
use crate::mm::page::PAGE_SIZE;
use crate::mm::slab::builtin_cache;
use std::rc::Rc;

pub mod hackbench;
pub mod thpfioscale;

/// What a program sees during a step (the engine's [`crate::engine::StepCtx`] over this kernel).
pub type StepCtx<'a> = crate::engine::StepCtx<'a, Kernel>;

/// A workload kind a scenario declares in `[[NAME]]` tables beside `[[task]]`.
///
/// Adding a kind is one file under workload/ with its spec type (serde, with
/// `deny_unknown_fields`) implementing this trait, and one line in the
/// `workloads` list of `Scenario` in config.rs.
///
/// # Contract
/// `validate` sees only the table and the machine and must reject every value
/// `spawn` cannot run; `spawn` only registers tasks (and wait queues, sockets)
/// with the engine, it runs nothing.
pub trait WorkloadSpec {
    /// Checks table number `i`; returns the number of tasks it creates.
    fn validate(&self, i: usize, machine: &crate::config::Machine) -> crate::error::Result<u64>;
    /// Registers the table's tasks with the engine.
    fn spawn(&self, sc: &crate::config::Scenario, eng: &mut crate::kernel::Engine);
}

/// Registers the tasks of every `[[task]]` table, `count` copies each, placed on the
/// CPUs in turn, each with its own random stream and in its cgroup.
pub fn spawn_tasks(sc: &crate::config::Scenario, eng: &mut crate::kernel::Engine) {
    use crate::engine::rng::streams;
    let ncpu = sc.machine.cpus as usize;
    let mut next_cpu = 0usize;
    let mut tid = 0u64;
    for spec in &sc.tasks {
        let ops = Rc::new(spec.program.clone());
        for _ in 0..spec.count {
            let rng = Stream::new(sc.seed, streams::TASK_STREAM_BASE + tid);
            let prog = OpProgram::new(spec, Rc::clone(&ops), rng);
            let t = eng.spawn(
                &spec.name,
                next_cpu % ncpu,
                spec.start.0,
                false,
                Box::new(prog),
            );
            if let Some(cg) = &spec.cgroup {
                let id = eng.kernel.mm.memcg.paths[cg.as_str()];
                eng.kernel.attach_task_memcg(t, id);
            }
            if spec.daemon {
                eng.set_daemon(t);
            }
            next_cpu += 1;
            tid += 1;
        }
    }
}

/// Runs the operations of a scenario's `[[task]]` `repeat` times.
pub struct OpProgram {
    ops: Rc<Vec<Op>>,
    pc: usize,
    left: u64,
    started: bool,
    repeat_left: u64,
    rng: Stream,
    /// Allocations that failed (the program carries on).
    pub failed_allocs: u64,
    /// File size when the current write started [pages].
    file_base: u64,
    /// Pages dirtied since balance_dirty_pages last ran.
    dirtied: u64,
    /// Pages the current read covers.
    read_pages: u64,
    /// State of the thpfioscale operations.
    thp: crate::workload::thpfioscale::ThpOpState,
    /// System calls started in the current step.
    syscalls: u64,
    /// Repetitions of the program finished so far (`{rep}` in file names).
    rep: u64,
    /// Tasks whose exit ends the repetitions (`until_exit`).
    until_exit: Rc<Vec<String>>,
    /// The current file operation's file name, placeholders filled in.
    file: String,
    /// Files an `unlink_dir` operation has left to delete, oldest first.
    unlink_list: std::collections::VecDeque<String>,
    /// The swap type a `swapoff` operation is emptying, once it has begun.
    swapoff: Option<usize>,
    /// The page order of a random `touch` (empty: sequential).
    touch_order: Vec<u32>,
    /// How far the current `cgroup_write` has gone.
    memcg_write: crate::mm::memcg_write::MemcgWrite,
    /// How far the current `sync` has gone.
    sync: crate::fs::sync::SyncPhase,
}

/// Pages 0..n in a random order (Fisher–Yates from the task's stream).
fn random_permutation(n: u64, rng: &mut Stream) -> Vec<u32> {
    let mut v: Vec<u32> = (0..n as u32).collect();
    for i in (1..v.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        v.swap(i, j);
    }
    v
}

/// A file name with its placeholders filled in: `{rep}` by the repetition, `{pid}` by
/// the task's pid (config::FILE_PLACEHOLDERS).
pub fn expand_file_name(template: &str, rep: u64, pid: u32) -> String {
    if !template.contains('{') {
        return template.to_string();
    }
    template
        .replace("{rep}", &rep.to_string())
        .replace("{pid}", &pid.to_string())
}

/// Whether every task of these names has exited (none alive, each started and gone).
pub fn all_exited(k: &Kernel, names: &[String]) -> bool {
    names.iter().all(|n| {
        k.tasks
            .iter()
            .filter(|t| t.comm == *n)
            .all(|t| !t.alive && (t.stats.exit_ns > 0 || t.oom_killed))
    })
}

/// Operations a program may start in one step before it yields to the engine, whose
/// clock then moves on (at least 1 ns a step): the bound on a step's wall time when
/// operations take no simulated time (every cost set to 0).
pub const MAX_OPS_PER_STEP: u32 = 4096;

/// Whether an operation enters the kernel as a system call, and so costs at least
/// `cost.syscall`; `compute`, `touch` and `thp_fault` run in user space (their faults are
/// charged per page).
pub fn is_syscall(op: &Op) -> bool {
    !matches!(
        op,
        Op::Compute { .. } | Op::Touch { .. } | Op::ThpFault { .. } | Op::UnlinkDir { .. }
    )
}

/// What a step that spent `spent` [ns] on operations, `syscalls` of which entered the
/// kernel, is charged on top: `syscalls` × `syscall` when the operations took no time at
/// all, else nothing (the modelled kernel work stands for the whole call).
pub fn syscall_floor(spent: u64, syscalls: u64, syscall: u64) -> u64 {
    if spent == 0 {
        syscalls.saturating_mul(syscall)
    } else {
        0
    }
}

/// Whether an operation can never take time: a zero-length compute, touch or thp_fault.
fn is_empty_op(op: &Op) -> bool {
    match op {
        Op::Compute { time } => time.0 == 0,
        Op::Touch { size, .. } | Op::ThpFault { size } => size.0 == 0,
        _ => false,
    }
}

impl OpProgram {
    /// A program for one copy of a task spec. A program of empty operations only
    /// (`compute 0s`) does nothing however often it is repeated, so it runs once.
    pub fn new(spec: &TaskSpec, ops: Rc<Vec<Op>>, rng: Stream) -> Self {
        let repeat = if ops.iter().all(is_empty_op) {
            1
        } else if !spec.until_exit.is_empty() {
            u64::MAX
        } else {
            spec.repeat
        };
        OpProgram {
            ops,
            pc: 0,
            left: 0,
            started: false,
            repeat_left: repeat,
            rng,
            failed_allocs: 0,
            file_base: 0,
            dirtied: 0,
            read_pages: 0,
            thp: Default::default(),
            touch_order: Vec::new(),
            memcg_write: Default::default(),
            sync: crate::fs::sync::SyncPhase::Start,
            syscalls: 0,
            rep: 0,
            until_exit: Rc::new(spec.until_exit.clone()),
            file: String::new(),
            unlink_list: Default::default(),
            swapoff: None,
        }
    }
}

impl OpProgram {
    /// Ends the step so the task can sleep for the I/O it waits on; moves past the
    /// operation first if it is complete.
    fn yield_for_io(&mut self, user: u64) -> StepOut {
        if self.left == 0 {
            self.pc += 1;
            self.started = false;
        }
        StepOut {
            user_ns: user,
            next: Step::Run,
        }
    }

    /// One step of a `swapoff` operation: begins it (EINVAL counted on a device that is
    /// not on), then frees one slot per call (try_to_unuse), sleeping for reads in flight;
    /// a page that cannot be brought in ends it with the device put back, and ends the task
    /// if the OOM killer chose it.
    fn swapoff(&mut self, cx: &mut StepCtx, path: &str, user: u64) -> Option<StepOut> {
        use crate::mm::swapfile::Unuse;
        let tid = cx.tid;
        let t = match self.swapoff {
            Some(t) => t,
            None => {
                let t = cx.k.swap_type_by_path(path);
                match t.map(|t| (t, cx.k.swapoff_begin(t, tid))) {
                    Some((t, Ok(()))) => {
                        self.swapoff = Some(t);
                        t
                    }
                    _ => {
                        self.left = 0;
                        return None;
                    }
                }
            }
        };
        match cx.k.try_to_unuse_one(t, tid) {
            Unuse::Done => {
                cx.k.swapoff_end(t, tid, true);
                self.swapoff = None;
                self.left = 0;
            }
            Unuse::Progress => cx.k.mm.cur.acc += cx.k.mm.cost.page_fault,
            Unuse::Wait(at) => {
                cx.k.sleep_until(at);
                return Some(self.yield_for_io(user));
            }
            Unuse::Failed(Fault::Retry) => {
                // Throttled in reclaim: sleep, then go on.
                return Some(StepOut {
                    user_ns: user,
                    next: Step::Run,
                });
            }
            Unuse::Failed(f) => {
                cx.k.swapoff_end(t, tid, false);
                self.swapoff = None;
                self.left = 0;
                if f == Fault::Killed {
                    return Some(StepOut {
                        user_ns: user,
                        next: Step::Exit,
                    });
                }
            }
        }
        None
    }

    /// [`step_unless_allocated`], counting the failures the operation goes on after.
    fn unless_allocated(
        &mut self,
        r: AllocResult,
        user: u64,
        failure_exits: bool,
    ) -> Option<StepOut> {
        if r == AllocResult::Failed && !failure_exits {
            self.failed_allocs += 1;
        }
        step_unless_allocated(r, user, failure_exits)
    }
}

/// What a step does when an allocation returned no page: a retry ends the step (the
/// task runs again and repeats the request), a kill ends the task, and so does a
/// failure when `failure_exits` (a page the task needs). None when the operation goes on.
pub fn step_unless_allocated(r: AllocResult, user: u64, failure_exits: bool) -> Option<StepOut> {
    let next = match r {
        AllocResult::Page(_) => return None,
        AllocResult::Failed if !failure_exits => return None,
        AllocResult::Retry => Step::Run,
        AllocResult::Killed | AllocResult::Failed => Step::Exit,
    };
    Some(StepOut {
        user_ns: user,
        next,
    })
}

/// The gfp mask of an explicit allocation type.
pub fn alloc_type_gfp(kind: AllocType) -> Gfp {
    match kind {
        AllocType::Unmovable => GFP_KERNEL,
        AllocType::Reclaimable => GFP_KERNEL_RECLAIMABLE,
        AllocType::Movable => GFP_HIGHUSER_MOVABLE,
        AllocType::Atomic => GFP_ATOMIC,
    }
}

impl OpProgram {
    /// One step of a write to the hugetlb pool's size (the `nr_hugepages` operation, or
    /// the `vm.nr_hugepages` sysctl): None once the pool is resized, else how the step ends.
    fn nr_hugepages(
        &mut self,
        cx: &mut StepCtx,
        pages: u64,
        node: Option<u32>,
        user: u64,
    ) -> Option<StepOut> {
        let nid = node.map(|n| n as usize);
        let r = cx.k.set_max_huge_pages(pages, nid, cx.tid, cx.quantum);
        self.resize_step(r, user)
    }

    /// How a step of a write that may take several steps ends: None once it returned,
    /// else the task runs again (cond_resched(), or asleep in reclaim: it goes on after).
    fn resize_step(&mut self, r: Resize, user: u64) -> Option<StepOut> {
        match r {
            Resize::Done => {
                self.left = 0;
                None
            }
            Resize::Yield | Resize::Sleep => Some(StepOut {
                user_ns: user,
                next: Step::Run,
            }),
        }
    }
}

impl OpProgram {
    /// A step of a `cgroup_write` ([`Kernel::mem_cgroup_file_write`]); None once the
    /// write has returned.
    fn cgroup_write(
        &mut self,
        cx: &mut StepCtx,
        cgroup: &str,
        file: &str,
        value: crate::config::CgroupValue,
        user: u64,
    ) -> Option<StepOut> {
        use crate::mm::memcg_write::{value_pages, MemcgFile};
        let memcg = &cx.k.mm.memcg;
        // Both were checked against the scenario's groups when it was read.
        let (Some(&id), Some(file)) = (memcg.paths.get(cgroup), MemcgFile::parse(file, memcg.dfl))
        else {
            self.left = 0;
            return None;
        };
        let pages = value_pages(value);
        let mut st = self.memcg_write;
        let r =
            cx.k.mem_cgroup_file_write(id, file, pages, cx.tid, cx.quantum, &mut st);
        self.memcg_write = st;
        self.resize_step(r, user)
    }
}

impl Program<Kernel> for OpProgram {
    /// Runs the program's operations for up to a quantum ([`OpProgram::run_ops`]); a step
    /// that would move the task on by no time at all costs `cost.syscall` for each
    /// operation that entered the kernel, so that simulated time moves on however cheap
    /// the operations are.
    fn step(&mut self, cx: &mut StepCtx) -> StepOut {
        let acc0 = cx.k.mm.cur.acc;
        self.syscalls = 0;
        let out = self.run_ops(cx);
        let cur = &cx.k.mm.cur;
        let spent = out.user_ns + (cur.acc - acc0);
        // A sleep, a wait on a queue or an exit moves the task on by itself.
        let stays = match out.next {
            Step::Run => cur.sleep == 0 && cur.block_on.is_none(),
            Step::Sleep(d) => d == 0 && cur.sleep == 0,
            Step::Block { .. } | Step::Exit => false,
        };
        if stays {
            // entry_SYSCALL_64 and the return to user space of operations that did
            // nothing else; a step that did modelled work is charged what it costs.
            cx.k.mm.cur.acc += syscall_floor(spent, self.syscalls, cx.k.mm.cost.syscall);
        }
        out
    }
}

impl OpProgram {
    /// The step's operations: runs on until a quantum of time is spent (counting
    /// [`syscall_floor`]) or [`MAX_OPS_PER_STEP`] were started.
    fn run_ops(&mut self, cx: &mut StepCtx) -> StepOut {
        let mut user = 0u64;
        let tid = cx.tid;
        let acc0 = cx.k.mm.cur.acc;
        let mut starts = 0u32;
        loop {
            let spent = user + cx.k.mm.cur.acc - acc0;
            let spent = spent + syscall_floor(spent, self.syscalls, cx.k.mm.cost.syscall);
            if acc0.saturating_add(spent) >= cx.quantum || starts >= MAX_OPS_PER_STEP {
                return StepOut {
                    user_ns: user,
                    next: Step::Run,
                };
            }
            if self.pc >= self.ops.len() {
                if !self.until_exit.is_empty() && all_exited(cx.k, &self.until_exit) {
                    return StepOut {
                        user_ns: user,
                        next: Step::Exit,
                    };
                }
                if self.repeat_left > 1 {
                    self.rep += 1;
                    self.repeat_left -= 1;
                    self.pc = 0;
                    self.started = false;
                    if self.ops.is_empty() {
                        return StepOut {
                            user_ns: user,
                            next: Step::Exit,
                        };
                    }
                    continue;
                }
                return StepOut {
                    user_ns: user,
                    next: Step::Exit,
                };
            }
            // A counted reference (not atomic: the engine is single-threaded) so that the
            // operation can be read while the program's state changes.
            let ops = Rc::clone(&self.ops);
            let op = &ops[self.pc];
            if !self.started {
                self.started = true;
                starts += 1;
                self.syscalls += is_syscall(op) as u64;
                self.left = match op {
                    Op::Compute { time } => time.0,
                    Op::Touch { size, order, .. } => {
                        let n = size.0.div_ceil(PAGE_SIZE);
                        self.touch_order = Vec::new();
                        if *order == crate::config::TouchOrder::Random {
                            self.touch_order = random_permutation(n, &mut self.rng);
                        }
                        n
                    }
                    Op::Unmap { size } => size.0.div_ceil(PAGE_SIZE),
                    Op::Alloc { count, .. } => *count,
                    Op::Free { count, .. } => count.unwrap_or(u64::MAX),
                    Op::Slab { objects, .. } => *objects,
                    Op::SlabFree { objects, .. } => objects.unwrap_or(u64::MAX),
                    Op::Sleep { .. }
                    | Op::SleepElapsed { .. }
                    | Op::Exit {}
                    | Op::Snapshot { .. } => 1,
                    Op::Unlink { file } => {
                        let pid = cx.k.tasks[tid as usize].pid;
                        self.file = expand_file_name(file, self.rep, pid);
                        1
                    }
                    Op::UnlinkDir { dir } => {
                        let prefix = format!("{dir}/");
                        self.unlink_list =
                            cx.k.files
                                .keys()
                                .filter(|n| n.starts_with(&prefix))
                                .cloned()
                                .collect();
                        self.unlink_list.len() as u64
                    }
                    Op::NrHugepages { .. } | Op::Sysctl { .. } => 1,
                    Op::CgroupWrite { .. } => {
                        self.memcg_write = Default::default();
                        1
                    }
                    Op::DropCaches { .. }
                    | Op::CompactMemory {}
                    | Op::ShapeFreeLists { .. }
                    | Op::ShapeFreeListsEnd {} => 1,
                    Op::Sync {} => {
                        self.sync = crate::fs::sync::SyncPhase::Start;
                        1
                    }
                    Op::Fadvise { file, .. } => {
                        let pid = cx.k.tasks[tid as usize].pid;
                        self.file = expand_file_name(file, self.rep, pid);
                        1
                    }
                    Op::Swapon { .. } | Op::Swapoff { .. } => 1,
                    Op::Madvise { .. } | Op::Signal { .. } | Op::Wait { .. } => 1,
                    Op::FioRead { .. } => 1,
                    Op::ThpFault { size } => {
                        self.thp.base = cx.k.tasks[tid as usize].vsize;
                        size.0.div_ceil(PAGE_SIZE)
                    }
                    Op::FioWrite {
                        files, file_size, ..
                    } => files * file_size.0.div_ceil(PAGE_SIZE),
                    Op::Write { file, size, .. } => {
                        let pid = cx.k.tasks[tid as usize].pid;
                        self.file = expand_file_name(file, self.rep, pid);
                        let ino = cx.k.lookup_or_create(&self.file);
                        self.file_base = cx.k.inodes[ino as usize].size_pages;
                        self.dirtied = 0;
                        size.0.div_ceil(PAGE_SIZE)
                    }
                    Op::Read { file, size, .. } => {
                        let pid = cx.k.tasks[tid as usize].pid;
                        self.file = expand_file_name(file, self.rep, pid);
                        let ino = cx.k.lookup_or_create(&self.file);
                        let file_pages = cx.k.inodes[ino as usize].size_pages;
                        self.read_pages = size
                            .map(|b| b.0.div_ceil(PAGE_SIZE))
                            .unwrap_or(file_pages)
                            .min(file_pages);
                        self.read_pages
                    }
                };
                if self.left == 0 {
                    // Nothing to do (a read of an empty file, a size of 0): the operation
                    // is over before it starts.
                    self.pc += 1;
                    self.started = false;
                    continue;
                }
            }
            let budget = cx.quantum.saturating_sub(user + cx.k.mm.cur.acc);
            match op {
                Op::Compute { .. } => {
                    let d = self.left.min(budget.max(1));
                    user += d;
                    self.left -= d;
                }
                Op::Touch { size, write, .. } => {
                    let n = size.0.div_ceil(PAGE_SIZE);
                    let i = n - self.left;
                    let index = self.touch_order.get(i as usize).map_or(i, |&p| p as u64);
                    match cx.k.handle_mm_fault_rw(tid, index, *write) {
                        Fault::Access | Fault::Minor => {
                            user += cx.k.mm.cost.touch_page;
                            self.left -= 1;
                            if cx.k.mm.cur.sleep > 0 {
                                // A page whose readahead read is still in flight: wait for it.
                                return self.yield_for_io(user);
                            }
                        }
                        Fault::Major => {
                            // Sleep until the page is read back; resume after it.
                            self.left -= 1;
                            return self.yield_for_io(user);
                        }
                        // Throttled in reclaim: sleep, then fault again.
                        Fault::Retry => {
                            return StepOut {
                                user_ns: user,
                                next: Step::Run,
                            }
                        }
                        // A fault that cannot be satisfied kills the task (VM_FAULT_OOM → SIGKILL).
                        Fault::Failed | Fault::Killed => {
                            return StepOut {
                                user_ns: user,
                                next: Step::Exit,
                            };
                        }
                    }
                }
                Op::Unmap { .. } => {
                    let freed = cx.k.unmap_anon(tid, self.left.min(64));
                    if freed == 0 {
                        // munmap of a range with nothing mapped: the syscall alone
                        // (syscall_floor), not a nanosecond of user time.
                        self.left = 0;
                    } else {
                        self.left -= freed;
                        user += 1;
                    }
                }
                Op::Alloc {
                    order, kind, gfp, ..
                } => {
                    // Validated with the scenario: every name is a known modifier.
                    let extra = crate::mm::gfp::gfp_modifiers(gfp).unwrap_or_default();
                    let r =
                        cx.k.alloc_held(tid, alloc_type_gfp(*kind) | extra, *order as usize);
                    if let Some(out) = self.unless_allocated(r, user, false) {
                        return out;
                    }
                    self.left -= 1;
                }
                Op::Free { which, .. } => {
                    let held = cx.k.tasks[tid as usize].held.len();
                    if held == 0 {
                        self.left = 0;
                    } else {
                        let idx = match which {
                            Which::Oldest => 0,
                            Which::Newest => held - 1,
                            Which::Random => self.rng.below(held as u64) as usize,
                        };
                        cx.k.free_held(tid, idx);
                        self.left -= 1;
                    }
                }
                Op::Slab { cache, in_use, .. } => {
                    let c = builtin_cache(cache).unwrap_or(0);
                    let r = cx.k.kmem_cache_alloc_as(c, tid, *in_use);
                    if let Some(out) = self.unless_allocated(r, user, false) {
                        return out;
                    }
                    self.left -= 1;
                }
                Op::SlabFree { cache, .. } => {
                    let c = builtin_cache(cache).unwrap_or(0);
                    let cpu = cx.k.tasks[tid as usize].cpu;
                    let cached = if cx.k.slab.caches[c].reclaimable {
                        cx.k.slab.lru_pop_any(c)
                    } else {
                        None
                    };
                    // Then the objects the task holds (in use).
                    let next = cached.or_else(|| {
                        let held = &mut cx.k.tasks[tid as usize].slab_held;
                        held.iter()
                            .position(|&(hc, _)| hc as usize == c)
                            .and_then(|i| held.remove(i))
                            .map(|(_, obj)| obj)
                    });
                    match next {
                        Some(obj) => {
                            cx.k.kmem_cache_free(c, obj, cpu);
                            self.left -= 1;
                        }
                        None => self.left = 0,
                    }
                }
                Op::Write { size, bs, .. } => {
                    let ino = cx.k.lookup_or_create(&self.file);
                    // open(O_CREAT) on ext4: the inode, its directory entry and metadata.
                    let r = cx.k.vfs_create(tid, ino);
                    if let Some(out) = self.unless_allocated(r, user, true) {
                        return out;
                    }
                    let n = size.0.div_ceil(PAGE_SIZE);
                    let done = (n - self.left) * PAGE_SIZE;
                    let index = self.file_base + (n - self.left);
                    // Bytes of the current write(2) left from this page.
                    let bs = bs.map_or(PAGE_SIZE, |b| b.0);
                    let len = (bs - done % bs).min(size.0 - done.min(size.0)).max(1);
                    let r = cx.k.file_write_folio(tid, ino, index, len);
                    let folio = match r {
                        AllocResult::Page(p) => Some(p),
                        _ => None,
                    };
                    if let Some(out) = self.unless_allocated(r, user, true) {
                        return out;
                    }
                    if done.is_multiple_of(bs) {
                        // A write(2) started at this page: its fixed part (ksys_write,
                        // vfs_write), charged once the page is written (not on a retry).
                        cx.k.mm.cur.acc += cx.k.mm.cost.write_call;
                    }
                    user += cx.k.mm.cost.touch_page;
                    self.left -= 1;
                    self.dirtied += 1;
                    // generic_perform_write() calls balance_dirty_pages_ratelimited() between
                    // folios, never while it is copying into one.
                    if self.dirtied >= crate::mm::page_writeback::DIRTY_RATELIMIT_PAGES
                        && folio.is_none_or(|p| cx.k.folio_last_page(p, index))
                        || self.left == 0
                    {
                        // balance_dirty_pages_ratelimited()
                        cx.k.balance_dirty_pages(tid, self.dirtied);
                        self.dirtied = 0;
                        if cx.k.mm.cur.sleep > 0 {
                            return self.yield_for_io(user);
                        }
                    }
                }
                Op::Read { bs, .. } => {
                    let ino = cx.k.lookup_or_create(&self.file);
                    let index = self.read_pages - self.left;
                    // Pages of the current read(2) left from this page.
                    let bs_pages = bs.map_or(1, |b| b.0 / PAGE_SIZE);
                    let req = (bs_pages - index % bs_pages).min(self.left);
                    let r = cx.k.file_read_folio(tid, ino, index, req);
                    if let Some(out) = self.unless_allocated(r, user, true) {
                        return out;
                    }
                    if index.is_multiple_of(bs_pages) {
                        // A read(2) started at this page: its fixed part (ksys_read,
                        // filemap_read), charged once the page is read (not on a retry).
                        cx.k.mm.cur.acc += cx.k.mm.cost.read_call;
                    }
                    user += cx.k.mm.cost.touch_page;
                    self.left -= 1;
                    if cx.k.mm.cur.sleep > 0 {
                        // Waiting for the read: resume after it.
                        return self.yield_for_io(user);
                    }
                }
                Op::Madvise { .. }
                | Op::ThpFault { .. }
                | Op::FioWrite { .. }
                | Op::FioRead { .. }
                | Op::Signal { .. }
                | Op::Wait { .. } => {
                    if let Some(out) =
                        self.thp
                            .step(op, cx, &mut self.left, &mut user, &mut self.rng)
                    {
                        if self.left == 0 {
                            self.pc += 1;
                            self.started = false;
                        }
                        return out;
                    }
                }
                Op::Unlink { .. } => {
                    cx.k.unlink(tid, &self.file);
                    self.left = 0;
                }
                Op::UnlinkDir { .. } => {
                    match self.unlink_list.pop_front() {
                        Some(name) => {
                            // Each file is an unlink(2) of its own.
                            self.syscalls += 1;
                            cx.k.unlink(tid, &name);
                            self.left -= 1;
                        }
                        None => self.left = 0,
                    }
                }
                Op::NrHugepages { pages, node } => {
                    if let Some(out) = self.nr_hugepages(cx, *pages, *node, user) {
                        return out;
                    }
                }
                Op::Sysctl { name, value } if name == "vm.nr_hugepages" => {
                    if let Some(out) = self.nr_hugepages(cx, *value, None, user) {
                        return out;
                    }
                }
                Op::Sysctl { name, value } => {
                    cx.k.vm_sysctl_write(name, *value);
                    self.left = 0;
                }
                Op::CgroupWrite {
                    cgroup,
                    file,
                    value,
                } => {
                    if let Some(out) = self.cgroup_write(cx, cgroup, file, *value, user) {
                        return out;
                    }
                }
                Op::Fadvise { advice, .. } => {
                    let ino = cx.k.lookup_or_create(&self.file);
                    cx.k.generic_fadvise(tid, ino, *advice);
                    self.left = 0;
                }
                Op::DropCaches { value } => {
                    let cpu = cx.k.tasks[tid as usize].cpu;
                    cx.k.drop_caches_sysctl_handler(*value, cpu);
                    self.left = 0;
                }
                Op::CompactMemory {} => {
                    cx.k.compact_nodes(tid);
                    self.left = 0;
                }
                Op::ShapeFreeLists { buddyinfo, size } => {
                    // Validated with the scenario: the text parses.
                    let targets =
                        crate::mm::free_area_layout::parse_buddyinfo(buddyinfo).unwrap_or_default();
                    cx.k.shape_free_lists(tid, &targets, size.0 / PAGE_SIZE, &mut self.rng);
                    self.left = 0;
                }
                Op::ShapeFreeListsEnd {} => {
                    cx.k.shape_free_lists_end(tid);
                    self.left = 0;
                }
                Op::Sync {} => {
                    use crate::fs::sync::SyncWait;
                    match cx.k.ksys_sync_step(&mut self.sync) {
                        SyncWait::Done => self.left = 0,
                        SyncWait::Block => {
                            return StepOut {
                                user_ns: user,
                                next: Step::Block {
                                    wq: cx.k.wb.sync_wq,
                                    timeout: None,
                                },
                            }
                        }
                        SyncWait::SleepUntil(t) => {
                            cx.k.sleep_until(t);
                            return self.yield_for_io(user);
                        }
                    }
                }
                Op::Swapon { path } => {
                    if let Some(t) = cx.k.swap_type_by_path(path) {
                        // EBUSY is counted on the device.
                        let _ = cx.k.sys_swapon(t);
                    }
                    self.left = 0;
                }
                Op::Swapoff { path } => {
                    if let Some(out) = self.swapoff(cx, path, user) {
                        return out;
                    }
                }
                Op::Snapshot { name } => {
                    let now = cx.now + user + cx.k.mm.cur.acc;
                    cx.k.proc_snapshot(name, now);
                    self.left = 0;
                }
                Op::Sleep { time } => {
                    self.pc += 1;
                    self.started = false;
                    return StepOut {
                        user_ns: user,
                        next: Step::Sleep(time.0),
                    };
                }
                Op::SleepElapsed { upto } => {
                    self.pc += 1;
                    self.started = false;
                    let end = match upto {
                        Some(name) => cx.k.signal_time(name).unwrap_or(cx.now + user),
                        None => cx.now + user,
                    };
                    let elapsed = end.saturating_sub(cx.k.tasks[tid as usize].stats.start_ns);
                    return StepOut {
                        user_ns: user,
                        next: Step::Sleep(elapsed),
                    };
                }
                Op::Exit {} => {
                    return StepOut {
                        user_ns: user,
                        next: Step::Exit,
                    }
                }
            }
            if self.left == 0 {
                self.pc += 1;
                self.started = false;
            }
        }
    }
}
