//! Tasks as the engine runs them: programs, steps and `current`.
//!
//! A task is a [`Program`]: a resumable state machine that the engine calls
//! one step at a time on a CPU. During a step the running task's context is a
//! [`Current`] — the kernel's `current` — installed by the engine before the
//! step (as a context switch sets the per-CPU `current` pointer) and taken
//! back when it ends. Kernel code reads the step's clock from it, adds the
//! system time it spends, and leaves in it what the scheduler must do when
//! the step ends: sleep, block on a wait queue, wake wait queues, start forked
//! children, reap OOM victims. The engine drives the kernel only through the
//! [`Os`] trait; it knows nothing of memory management or workloads.

use std::rc::Rc;

/// A task's id: the index of its record in the engine and in the kernel.
pub type TaskId = u32;

/// The pid a task is given (the first tasks get pids from 100, as after boot).
pub const fn pid_of(tid: TaskId) -> u32 {
    tid + 100
}

/// What a task does after a step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    /// Keep running.
    Run,
    /// Sleep for this long [ns].
    Sleep(u64),
    /// Wait on a wait queue, optionally with a timeout [ns].
    Block {
        /// Wait queue id.
        wq: usize,
        /// Timeout.
        timeout: Option<u64>,
    },
    /// Exit.
    Exit,
}

/// The result of one step: user time used and what comes next.
/// System time is what the kernel calls accrued in [`Current::acc`].
#[derive(Debug, Clone, Copy)]
pub struct StepOut {
    /// User time [ns].
    pub user_ns: u64,
    /// Next state.
    pub next: Step,
}

/// The running task's context during one engine action (the kernel's `current`).
///
/// # Contract
/// The engine fills `tid`, `pid`, `comm`, `cpu`, `now`, `quantum` and the
/// opening `acc` before it calls into the kernel, and reads every other field
/// when the action ends, then clears them. Kernel code may:
/// - add system time to `acc` (never lower it);
/// - add to `sleep` when the task must sleep when its step ends (I/O waits,
///   `schedule_timeout`; a throttle also counts in [`Os::take_throttle`]), or set
///   `block_on` to sleep on a wait queue instead (a throttle: the reclaimer limit);
/// - push wait queues to `wake` (`wake_up_all` when the step ends), children
///   it forked to `start` (`wake_up_new_task`) and tasks the OOM killer chose
///   to `kill`;
/// - read `atomic`: while it is set the context may not sleep (no throttling,
///   no waiting for I/O).
#[derive(Debug, Clone, Default)]
pub struct Current {
    /// The running task.
    pub tid: TaskId,
    /// Its pid.
    pub pid: u32,
    /// Its command name.
    pub comm: Rc<str>,
    /// The CPU it runs on.
    pub cpu: usize,
    /// Simulated time at the start of the step [ns].
    pub now: u64,
    /// System time the step has accrued so far [ns], lock spinning included.
    pub acc: u64,
    /// Work a program does before it yields [ns].
    pub quantum: u64,
    /// Time the task sleeps after its step, for I/O or a throttle [ns].
    pub sleep: u64,
    /// Time the task already waited inside the step and went on after, as kernel code
    /// does after a synchronous wait (folio_wait_writeback in limit reclaim) [ns]; it
    /// moves the step's clock on and is slept after the step.
    pub slept: u64,
    /// A wait queue the task sleeps on after its step.
    pub block_on: Option<usize>,
    /// Wait queues to wake (wake_up_all) when the step ends.
    pub wake: Vec<usize>,
    /// Tasks forked during the step, started when it ends.
    pub start: Vec<TaskId>,
    /// Tasks the OOM killer chose; the engine takes them off its queues.
    pub kill: Vec<TaskId>,
    /// The context may not sleep (task creation by the engine, interrupts).
    pub atomic: bool,
}

impl Current {
    /// Simulated time inside the current step [ns].
    #[inline(always)]
    pub fn clock(&self) -> u64 {
        self.now + self.acc + self.slept
    }
}

/// What a program sees during a step: the kernel, and the step's identity.
pub struct StepCtx<'a, K> {
    /// The kernel.
    pub k: &'a mut K,
    /// The running task.
    pub tid: TaskId,
    /// Simulated time at the start of the step [ns].
    pub now: u64,
    /// Work to do before yielding [ns].
    pub quantum: u64,
}

/// A task's behaviour: a workload's process or a kernel thread.
///
/// # Contract
/// `step` must make progress: return `Run` only after using some time
/// (user time, or kernel calls that cost system time), and never use much
/// more than `quantum` in one call.
pub trait Program<K> {
    /// Runs the task's next piece of work.
    fn step(&mut self, cx: &mut StepCtx<K>) -> StepOut;
}

/// The kernel as the engine drives it.
///
/// # Contract
/// The engine calls [`Os::current`] to install the context of every action
/// (a task's creation, a step) before the other calls of that action, and
/// reads the requests from it after them (see [`Current`]). The other methods
/// may change only kernel state and `current`; none of them may call back
/// into the engine.
pub trait Os {
    /// The running task's context.
    fn current(&mut self) -> &mut Current;
    /// Reserves the kernel's record of a new task (alloc_task_struct).
    fn alloc_task_struct(&mut self, comm: &str, cpu: usize, kthread: bool) -> TaskId;
    /// Gives a reserved task what it needs to run (copy_process); false if it cannot run.
    fn copy_process(&mut self, tid: TaskId, now: u64) -> bool;
    /// The task runs on `cpu` from now on (set_task_cpu).
    fn set_task_cpu(&mut self, tid: TaskId, cpu: usize);
    /// Completes the I/O that finished by `now` (the block layer's completions).
    fn process_io(&mut self, now: u64);
    /// Continues kernel work the task slept in before its program runs again; true if
    /// the task must sleep again.
    fn resume_kernel_work(&mut self, tid: TaskId) -> bool;
    /// Work done on the return to user space (resume_user_mode_work).
    fn exit_to_user_mode(&mut self, tid: TaskId);
    /// The task exits at the end of its step, at `at` (do_exit).
    fn do_exit(&mut self, tid: TaskId, at: u64);
    /// Adds a step's user and system time to the task's statistics.
    fn account_step(&mut self, tid: TaskId, user_ns: u64, sys_ns: u64);
    /// Adds time spent runnable on a run queue to the task's statistics.
    fn account_runq_wait(&mut self, tid: TaskId, ns: u64);
    /// Records when the task's last step ended.
    fn set_exit_time(&mut self, tid: TaskId, at: u64);
    /// The part of the `sleep` of the action that ended that is a throttle
    /// (reclaim_throttle, balance_dirty_pages, congestion_wait, the memory.high
    /// penalty), the rest being I/O waits [ns]; zero for the next action.
    fn take_throttle(&mut self) -> u64;
}
