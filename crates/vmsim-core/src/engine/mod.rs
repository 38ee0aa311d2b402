//! The discrete-event engine: clock, event queue, CPUs with run queues, tasks.
//!
//! Time is simulated nanoseconds. Events are ordered by (time, sequence
//! number), so two events at the same instant run in the order they were
//! scheduled and every run with the same inputs is identical. A CPU runs one
//! task at a time; the task's program does up to `sched.quantum` of work per
//! step and says what comes next (run on, sleep, block on a wait queue, exit).
//! User time is what the program reports; system time is what the kernel
//! operations it called cost, including spinning on contended locks.
//! Scheduling is round robin with a time slice, wake-up placement on an idle
//! CPU (the previous one first) and idle stealing from the longest run queue:
//! a small CFS, enough to share CPUs fairly and to make waiting visible.
//!
//! Simplification: a step runs to completion at its start time, so a wait
//! queue entry made in a step is visible at once although the CPU stays busy
//! until the step's end (at most one quantum).
//!
//! The engine knows nothing of memory management or of workloads: it is
//! generic over the kernel it drives ([`Os`], with its contract), runs tasks
//! as [`Program`]s, and passes each action's context in [`Current`] (see
//! `task.rs`). It imports only the scheduler's knobs from the config.

pub mod lock;
pub mod rng;
pub mod task;
pub mod timeline;

use crate::config::Sched;
use lock::WaitQueue;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::rc::Rc;
pub use task::{pid_of, Current, Os, Program, Step, StepCtx, StepOut, TaskId};
use timeline::{StateLog, TaskTimelineState as St};

/// What happens at an instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Ev {
    /// A CPU finished its current piece of work: run its task on, or schedule.
    Schedule(u32),
    /// A sleeping or blocked task's timer fires (ignored if the token is stale).
    Wake(TaskId, u64),
    /// A pending task is created.
    Start(TaskId),
    /// A task another task forked becomes runnable.
    WakeNew(TaskId),
}

/// A task's scheduling state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TaskState {
    /// Created later.
    Pending,
    /// On a run queue.
    Runnable,
    /// On a CPU.
    Running,
    /// Sleeping until a timer.
    Sleeping,
    /// Waiting on a wait queue.
    Blocked(usize),
    /// Exited or killed.
    Dead,
}

/// Scheduler view of a task (struct sched_entity and friends).
#[derive(Debug, Clone)]
struct SchedEntity {
    state: TaskState,
    cpu: usize,
    token: u64,
    /// System time of work done on the task's behalf before it first runs (fork) [ns].
    pending_sys: u64,
    runnable_since: u64,
    start_at: u64,
    kthread: bool,
    /// A user task the run does not wait for (not counted in `live_user_tasks`).
    daemon: bool,
    comm: Rc<str>,
}

/// One CPU.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct Cpu {
    /// Task on the CPU.
    #[serde(skip)]
    pub current: Option<TaskId>,
    /// Task that ran last (a context switch costs when another one runs).
    #[serde(skip)]
    last: Option<TaskId>,
    /// Run queue.
    #[serde(skip)]
    pub rq: VecDeque<TaskId>,
    /// Whether the CPU is idle (no event pending for it).
    #[serde(skip)]
    idle: bool,
    #[serde(skip)]
    idle_since: u64,
    #[serde(skip)]
    slice_start: u64,
    /// Node of the CPU.
    pub node: usize,
    /// User time [ns].
    pub user_ns: u64,
    /// System time [ns].
    pub sys_ns: u64,
    /// Idle time [ns].
    pub idle_ns: u64,
    /// Context switches.
    pub context_switches: u64,
}

/// The engine: clock, events, CPUs, tasks and the kernel they run on.
pub struct Engine<K: Os> {
    /// Simulated time [ns].
    pub now: u64,
    queue: BinaryHeap<Reverse<(u64, u64, Ev)>>,
    seq: u64,
    /// CPUs.
    pub cpus: Vec<Cpu>,
    sched: Vec<SchedEntity>,
    programs: Vec<Option<Box<dyn Program<K>>>>,
    /// Wait queues, by id (wait_queue_head_t).
    pub waitqueues: Vec<WaitQueue>,
    /// The kernel.
    pub kernel: K,
    cfg: Sched,
    /// Cost of a context switch [ns].
    context_switch: u64,
    /// User tasks not yet exited (including pending ones).
    pub live_user_tasks: usize,
    /// Tasks whose creation failed (no memory for a kernel stack).
    pub fork_failures: u64,
    /// Events processed.
    pub events: u64,
    /// Every task's changes of state, when the run records its timeline.
    pub timeline: Option<StateLog>,
}

impl<K: Os> Engine<K> {
    /// An engine over a booted kernel with a CPU for each entry of `cpu_to_node` (the
    /// CPU's node); a context switch costs `context_switch` [ns] of system time.
    pub fn new(kernel: K, cpu_to_node: &[usize], cfg: Sched, context_switch: u64) -> Engine<K> {
        let cpus = cpu_to_node
            .iter()
            .map(|&node| Cpu {
                node,
                idle: true,
                ..Default::default()
            })
            .collect();
        Engine {
            now: 0,
            queue: BinaryHeap::new(),
            seq: 0,
            cpus,
            sched: Vec::new(),
            programs: Vec::new(),
            waitqueues: Vec::new(),
            kernel,
            cfg,
            context_switch,
            live_user_tasks: 0,
            fork_failures: 0,
            events: 0,
            timeline: None,
        }
    }

    /// Notes a change of a task's state on the timeline, when one is recorded.
    #[inline(always)]
    fn note(&mut self, at: u64, tid: TaskId, state: St) {
        if let Some(log) = &mut self.timeline {
            log.note(self.now, at, tid, state);
        }
    }

    fn schedule_at(&mut self, t: u64, ev: Ev) {
        self.seq += 1;
        self.queue.push(Reverse((t, self.seq, ev)));
    }

    /// Registers a task to be created at `at` on `cpu` running `program`; returns its id.
    pub fn spawn(
        &mut self,
        comm: &str,
        cpu: usize,
        at: u64,
        kthread: bool,
        program: Box<dyn Program<K>>,
    ) -> TaskId {
        let tid = self.register(comm, cpu, at, kthread, program);
        self.schedule_at(at, Ev::Start(tid));
        tid
    }

    /// Registers a task that another task's program will fork (via [`Current::start`]).
    pub fn spawn_deferred(
        &mut self,
        comm: &str,
        cpu: usize,
        program: Box<dyn Program<K>>,
    ) -> TaskId {
        self.register(comm, cpu, u64::MAX, false, program)
    }

    /// Gives a new task its kernel and scheduler records; nothing is scheduled yet.
    fn register(
        &mut self,
        comm: &str,
        cpu: usize,
        at: u64,
        kthread: bool,
        program: Box<dyn Program<K>>,
    ) -> TaskId {
        let tid = self.sched.len() as TaskId;
        let cpu = cpu % self.cpus.len();
        let ktid = self.kernel.alloc_task_struct(comm, cpu, kthread);
        debug_assert_eq!(ktid, tid, "kernel and scheduler task ids agree");
        self.sched.push(SchedEntity {
            state: TaskState::Pending,
            cpu,
            token: 0,
            pending_sys: 0,
            runnable_since: 0,
            start_at: at,
            kthread,
            daemon: false,
            comm: Rc::from(comm),
        });
        self.programs.push(Some(program));
        if !kthread {
            self.live_user_tasks += 1;
        }
        tid
    }

    /// Makes a user task one the run does not wait for: the run ends when every other
    /// user task has, whatever this one is doing.
    pub fn set_daemon(&mut self, tid: TaskId) {
        let se = &mut self.sched[tid as usize];
        if !se.kthread && !se.daemon && se.state != TaskState::Dead {
            se.daemon = true;
            self.live_user_tasks -= 1;
        }
    }

    /// Whether a task is counted in `live_user_tasks`.
    fn counted(&self, tid: TaskId) -> bool {
        let se = &self.sched[tid as usize];
        !se.kthread && !se.daemon
    }

    /// Creates a new wait queue and returns its id.
    pub fn new_waitqueue(&mut self) -> usize {
        self.waitqueues.push(WaitQueue::new());
        self.waitqueues.len() - 1
    }

    /// Scheduling state of a task.
    pub fn task_state(&self, tid: TaskId) -> TaskState {
        self.sched[tid as usize].state
    }

    /// Time of the next event, if any.
    pub fn next_event_time(&self) -> Option<u64> {
        self.queue.peek().map(|Reverse((t, _, _))| *t)
    }

    /// Processes every event up to and including time `t`, then sets the clock to `t`.
    pub fn run_until(&mut self, t: u64) {
        self.run_until_at_most(t, u64::MAX);
    }

    /// [`Engine::run_until`], processing at most `max_events` events; true when the clock
    /// reached `t`, false when it stopped earlier (the caller looks up, then goes on).
    pub fn run_until_at_most(&mut self, t: u64, max_events: u64) -> bool {
        let mut budget = max_events;
        while let Some(&Reverse((et, _, ev))) = self.queue.peek() {
            if et > t {
                break;
            }
            if budget == 0 {
                return false;
            }
            budget -= 1;
            self.queue.pop();
            self.now = et;
            self.events += 1;
            match ev {
                Ev::Schedule(cpu) => self.cpu_step(cpu as usize),
                Ev::Wake(tid, token) => self.timer_wake(tid, token),
                Ev::Start(tid) => self.start_task(tid),
                Ev::WakeNew(tid) => self.try_to_wake_up(tid),
            }
        }
        self.now = self.now.max(t);
        true
    }

    /// Closes the books at time `t` (at most the current time): idle CPUs get their idle time up to `t`.
    pub fn finish_at(&mut self, t: u64) {
        for c in &mut self.cpus {
            if c.idle {
                c.idle_ns += t.saturating_sub(c.idle_since);
                c.idle_since = t;
            }
        }
    }

    /// Installs `current` for an action of task `tid` on `cpu` at `now`, opening with
    /// `acc` of system time; the requests of earlier actions not yet acted on stay.
    fn set_current(&mut self, tid: TaskId, cpu: usize, now: u64, acc: u64) {
        let comm = Rc::clone(&self.sched[tid as usize].comm);
        let quantum = self.cfg.quantum.0;
        let cur = self.kernel.current();
        cur.tid = tid;
        cur.pid = pid_of(tid);
        cur.comm = comm;
        cur.cpu = cpu;
        cur.now = now;
        cur.acc = acc;
        cur.slept = 0;
        cur.quantum = quantum;
    }

    fn start_task(&mut self, tid: TaskId) {
        let cpu = self.sched[tid as usize].cpu;
        self.set_current(tid, cpu, self.now, 0);
        self.kernel.process_io(self.now);
        self.kernel.current().atomic = true;
        let ok = self.kernel.copy_process(tid, self.now);
        let cur = self.kernel.current();
        cur.atomic = false;
        cur.sleep = 0;
        // The fork's cost is system time of the task's first step.
        self.sched[tid as usize].pending_sys = std::mem::take(&mut cur.acc);
        self.reap_oom_victims();
        if ok {
            self.try_to_wake_up(tid);
        } else {
            self.fork_failures += 1;
            self.sched[tid as usize].state = TaskState::Dead;
            if self.counted(tid) {
                self.live_user_tasks -= 1;
            }
        }
    }

    fn timer_wake(&mut self, tid: TaskId, token: u64) {
        let s = &self.sched[tid as usize];
        if s.token != token {
            return;
        }
        match s.state {
            TaskState::Sleeping => {}
            TaskState::Blocked(wq) => {
                self.waitqueues[wq].remove(tid);
            }
            _ => return,
        }
        self.try_to_wake_up(tid);
    }

    /// Wakes every task on a wait queue (wake_up_all).
    pub fn wake_up_all(&mut self, wq: usize) {
        for t in self.waitqueues[wq].wake_all() {
            self.sched[t as usize].token += 1;
            self.try_to_wake_up(t);
        }
    }

    /// Wakes the first task on a wait queue (wake_up with an exclusive waiter).
    pub fn wake_up_one(&mut self, wq: usize) {
        if let Some(t) = self.waitqueues[wq].wake_one() {
            self.sched[t as usize].token += 1;
            self.try_to_wake_up(t);
        }
    }

    /// Makes a task runnable on a CPU chosen like select_task_rq_fair (try_to_wake_up).
    fn try_to_wake_up(&mut self, tid: TaskId) {
        let now = self.now;
        let prev = self.sched[tid as usize].cpu;
        let node = self.cpus[prev].node;
        let cpu = if self.cpus[prev].idle {
            prev
        } else if let Some(c) =
            (0..self.cpus.len()).find(|&c| self.cpus[c].idle && self.cpus[c].node == node)
        {
            c
        } else if let Some(c) = (0..self.cpus.len()).find(|&c| self.cpus[c].idle) {
            c
        } else {
            // Least loaded CPU (queued plus running) on the task's node, previous CPU on ties.
            let load = |c: &Cpu| c.rq.len() + c.current.is_some() as usize;
            let mut best = prev;
            for c in 0..self.cpus.len() {
                if self.cpus[c].node == node && load(&self.cpus[c]) < load(&self.cpus[best]) {
                    best = c;
                }
            }
            best
        };
        self.note(now, tid, St::Runnable);
        let s = &mut self.sched[tid as usize];
        s.state = TaskState::Runnable;
        s.runnable_since = now;
        s.cpu = cpu;
        let c = &mut self.cpus[cpu];
        c.rq.push_back(tid);
        if c.idle {
            c.idle = false;
            c.idle_ns += now - c.idle_since;
            self.schedule_at(now, Ev::Schedule(cpu as u32));
        }
    }

    /// Marks OOM victims dead and takes them off run and wait queues.
    fn reap_oom_victims(&mut self) {
        let victims = std::mem::take(&mut self.kernel.current().kill);
        for v in victims {
            if self.sched[v as usize].state != TaskState::Dead {
                self.note(self.now, v, St::Dead);
            }
            let s = &mut self.sched[v as usize];
            let state = s.state;
            s.state = TaskState::Dead;
            s.token += 1;
            match state {
                TaskState::Runnable => {
                    let cpu = s.cpu;
                    if let Some(i) = self.cpus[cpu].rq.iter().position(|&t| t == v) {
                        self.cpus[cpu].rq.remove(i);
                    }
                }
                TaskState::Blocked(wq) => {
                    self.waitqueues[wq].remove(v);
                }
                _ => {}
            }
            if state != TaskState::Dead && self.counted(v) {
                self.live_user_tasks -= 1;
            }
            self.programs[v as usize] = None;
        }
    }

    /// Pulls one task from a run queue at least two longer than this CPU's (load_balance, same node first).
    fn load_balance(&mut self, cpu: usize) {
        let own = self.cpus[cpu].rq.len();
        let node = self.cpus[cpu].node;
        let mut busiest: Option<usize> = None;
        for c in 0..self.cpus.len() {
            let len = self.cpus[c].rq.len();
            if c == cpu || len < own + 2 {
                continue;
            }
            let better = match busiest {
                None => true,
                Some(b) => {
                    let (same_b, same_c) = (self.cpus[b].node == node, self.cpus[c].node == node);
                    (same_c && !same_b) || (same_c == same_b && len > self.cpus[b].rq.len())
                }
            };
            if better {
                busiest = Some(c);
            }
        }
        if let Some(b) = busiest {
            if let Some(t) = self.cpus[b].rq.pop_back() {
                self.cpus[cpu].rq.push_back(t);
            }
        }
    }

    /// Picks the next task for an idle-bound CPU: its own queue, else steal from the longest one.
    fn pick_next_task(&mut self, cpu: usize) -> Option<TaskId> {
        self.load_balance(cpu);
        if let Some(t) = self.cpus[cpu].rq.pop_front() {
            return Some(t);
        }
        let node = self.cpus[cpu].node;
        let mut busiest: Option<usize> = None;
        for c in 0..self.cpus.len() {
            let len = self.cpus[c].rq.len();
            if len == 0 {
                continue;
            }
            let better = match busiest {
                None => true,
                Some(b) => {
                    let bl = self.cpus[b].rq.len();
                    let same_b = self.cpus[b].node == node;
                    let same_c = self.cpus[c].node == node;
                    (same_c && !same_b) || (same_c == same_b && len > bl)
                }
            };
            if better {
                busiest = Some(c);
            }
        }
        busiest.and_then(|b| self.cpus[b].rq.pop_back())
    }

    /// Handles a CPU whose current piece of work has ended.
    fn cpu_step(&mut self, cpu: usize) {
        let now = self.now;
        if let Some(tid) = self.cpus[cpu].current {
            let alive = self.sched[tid as usize].state == TaskState::Running;
            let expired = now.saturating_sub(self.cpus[cpu].slice_start) >= self.cfg.slice.0;
            if expired {
                // The scheduler tick's periodic balancing.
                self.load_balance(cpu);
            }
            if alive && (!expired || self.cpus[cpu].rq.is_empty()) {
                self.run_step(cpu, tid);
                return;
            }
            self.cpus[cpu].current = None;
            if alive {
                // Preempted at the end of its slice.
                self.note(now, tid, St::Runnable);
                let s = &mut self.sched[tid as usize];
                s.state = TaskState::Runnable;
                s.runnable_since = now;
                self.cpus[cpu].rq.push_back(tid);
            }
        }
        match self.pick_next_task(cpu) {
            Some(next) => {
                let mut t = now;
                let c = &mut self.cpus[cpu];
                if c.last != Some(next) {
                    c.context_switches += 1;
                    c.sys_ns += self.context_switch;
                    t += self.context_switch;
                }
                c.current = Some(next);
                c.last = Some(next);
                c.slice_start = t;
                self.note(now, next, St::Running);
                let s = &mut self.sched[next as usize];
                let waited = now - s.runnable_since;
                s.state = TaskState::Running;
                s.cpu = cpu;
                self.kernel.account_runq_wait(next, waited);
                self.schedule_at(t, Ev::Schedule(cpu as u32));
            }
            None => {
                let c = &mut self.cpus[cpu];
                c.idle = true;
                c.idle_since = now;
            }
        }
    }

    /// Runs one step of a task's program on a CPU and acts on what it asks for next.
    fn run_step(&mut self, cpu: usize, tid: TaskId) {
        let now = self.now;
        self.kernel.set_task_cpu(tid, cpu);
        // Completions come in before the task runs (interrupts), in the context of the
        // previous action; their cost is not the task's.
        self.kernel.process_io(now);
        // Work done on the task's behalf before it first ran (fork) opens its first step.
        let pending = std::mem::take(&mut self.sched[tid as usize].pending_sys);
        self.set_current(tid, cpu, now, pending);
        self.kernel.current().sleep = 0;
        self.kernel.take_throttle();
        let Some(mut prog) = self.programs[tid as usize].take() else {
            return;
        };
        // A task that slept inside kernel work (direct reclaim) finishes it before running
        // its program.
        let out = if self.kernel.resume_kernel_work(tid) {
            StepOut {
                user_ns: 0,
                next: Step::Run,
            }
        } else {
            let mut cx = StepCtx {
                k: &mut self.kernel,
                tid,
                now,
                quantum: self.cfg.quantum.0,
            };
            prog.step(&mut cx)
        };
        // resume_user_mode_work(), unless the task is asleep inside the kernel.
        let cur = self.kernel.current();
        if out.next != Step::Exit && cur.sleep == 0 && cur.block_on.is_none() {
            self.kernel.exit_to_user_mode(tid);
        }
        self.programs[tid as usize] = Some(prog);
        if out.next == Step::Exit {
            // do_exit frees the task's memory at the end of its last step.
            let at = now + out.user_ns + self.kernel.current().acc;
            self.kernel.do_exit(tid, at);
        }
        let cur = self.kernel.current();
        let sys = std::mem::take(&mut cur.acc);
        // Time the task must wait for I/O it started (io_schedule) turns into a sleep, and
        // so does the time it waited inside the step and went on after.
        let io_wait = std::mem::take(&mut cur.sleep) + std::mem::take(&mut cur.slept);
        // Kernel code that waits on a queue (the reclaimer limit) turns the step's end into a block.
        let block_on = cur.block_on.take();
        let kernel_block = block_on.is_some() && out.next == Step::Run;
        let next = match out.next {
            Step::Run if block_on.is_some() => Step::Block {
                wq: block_on.unwrap_or_default(),
                timeout: None,
            },
            Step::Run if io_wait > 0 => Step::Sleep(io_wait),
            Step::Sleep(d) => Step::Sleep(d + io_wait),
            other => other,
        };
        let throttle = self.kernel.take_throttle().min(io_wait);
        let user = out.user_ns;
        {
            let c = &mut self.cpus[cpu];
            c.user_ns += user;
            c.sys_ns += sys;
        }
        self.kernel.account_step(tid, user, sys);
        let end = now + (user + sys).max(1);
        self.reap_oom_victims();
        if self.sched[tid as usize].state == TaskState::Dead {
            // Killed by the OOM killer during its own step.
            self.schedule_at(end, Ev::Schedule(cpu as u32));
            return;
        }
        if self.timeline.is_some() {
            self.note_step_end(tid, end, next, io_wait, throttle, kernel_block);
        }
        match next {
            Step::Run => {}
            Step::Sleep(d) => {
                let s = &mut self.sched[tid as usize];
                s.state = TaskState::Sleeping;
                s.token += 1;
                let token = s.token;
                self.cpus[cpu].current = None;
                self.schedule_at(end + d, Ev::Wake(tid, token));
            }
            Step::Block { wq, timeout } => {
                let s = &mut self.sched[tid as usize];
                s.state = TaskState::Blocked(wq);
                s.token += 1;
                let token = s.token;
                self.waitqueues[wq].add(tid);
                self.cpus[cpu].current = None;
                if let Some(d) = timeout {
                    self.schedule_at(end + d, Ev::Wake(tid, token));
                }
            }
            Step::Exit => {
                self.kernel.set_exit_time(tid, end);
                self.sched[tid as usize].state = TaskState::Dead;
                if self.counted(tid) {
                    self.live_user_tasks -= 1;
                }
                self.cpus[cpu].current = None;
                self.programs[tid as usize] = None;
            }
        }
        let wakes = std::mem::take(&mut self.kernel.current().wake);
        for wq in wakes {
            self.wake_up_all(wq);
        }
        // Children forked during the step become runnable when it ends (wake_up_new_task).
        let forks = std::mem::take(&mut self.kernel.current().start);
        for child in forks {
            if self.sched[child as usize].state == TaskState::Pending {
                self.sched[child as usize].start_at = end;
                self.schedule_at(end, Ev::WakeNew(child));
            }
        }
        self.schedule_at(end, Ev::Schedule(cpu as u32));
    }

    /// Notes what a task does after a step that ended at `end`: the throttle and the I/O
    /// wait of `io_wait` (the throttle first), then its program's own sleep; a block on a
    /// wait queue the kernel asked for is a throttle (the reclaimer limit).
    fn note_step_end(
        &mut self,
        tid: TaskId,
        end: u64,
        next: Step,
        io_wait: u64,
        throttle: u64,
        kernel_block: bool,
    ) {
        match next {
            Step::Run => {}
            Step::Sleep(d) => {
                let mut t = end;
                for (ns, state) in [
                    (throttle, St::Throttled),
                    (io_wait - throttle, St::IoWait),
                    (d - io_wait, St::Sleeping),
                ] {
                    if ns > 0 {
                        self.note(t, tid, state);
                        t += ns;
                    }
                }
            }
            Step::Block { .. } if kernel_block => self.note(end, tid, St::Throttled),
            Step::Block { .. } => self.note(end, tid, St::Sleeping),
            Step::Exit => self.note(end, tid, St::Dead),
        }
    }

    /// Start time of a task [ns].
    pub fn task_start(&self, tid: TaskId) -> u64 {
        self.sched[tid as usize].start_at
    }
}
