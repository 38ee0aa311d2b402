//! hackbench in process mode (hackbench.c, `hackbench GROUPS process LOOPS`).
//!
//! The parent creates, for each group, `fds` receivers, each with its own
//! AF_UNIX stream socket, then `fds` senders that share all the group's
//! sockets; every worker faults in its memory and reports ready; once all
//! are ready the parent starts the clock and wakes them. Each sender writes
//! `loops` rounds of one `datasize`-byte message to every receiver of its
//! group; each receiver reads `fds × loops` messages. The parent waits for
//! every worker and reports the time since the start — the "Time:" that
//! hackbench prints (`hackbench_seconds` in the run's workload metrics).
//!
//! Workers re-touch the first `wss` bytes of their memory (stack and data)
//! at every step, so pages that reclaim swapped out come back as major
//! faults.

use super::{StepCtx, WorkloadSpec};
use crate::config::{clip, table_knob_named, Machine, Scenario, MAX_TASKS};
use crate::engine::{Program, Step, StepOut, TaskId};
use crate::error::{Error, Result};
use crate::kernel::{AllocResult, Engine, Kernel};
use crate::mm::memory::Fault;
use crate::mm::page::PAGE_SIZE;
use crate::net::af_unix::Send;
use crate::units::{Bytes, Nanos};
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::Rc;

/// `hackbench GROUPS process LOOPS` (hackbench.c): groups of `fds` senders and
/// `fds` receivers exchanging `datasize`-byte messages over AF_UNIX stream sockets.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HackbenchSpec {
    /// Command name of the parent and its workers.
    #[serde(default = "hackbench_name")]
    pub name: String,
    /// Number of groups (hackbench's first argument).
    pub groups: u64,
    /// Senders and receivers per group (hackbench's `-f`, 20).
    #[serde(default = "hackbench_fds")]
    pub fds: u64,
    /// Rounds each sender writes to every receiver (hackbench's `-l`, 100).
    #[serde(default = "hackbench_loops")]
    pub loops: u64,
    /// Message size [bytes] (DATASIZE, 100).
    #[serde(default = "hackbench_datasize")]
    pub datasize: Bytes,
    /// Anonymous memory each worker faults in before it reports ready [bytes].
    #[serde(default)]
    pub worker_memory: Bytes,
    /// Part of that memory each worker re-touches at every step (its stack and data) [bytes].
    #[serde(default = "hackbench_wss")]
    pub worker_wss: Bytes,
    /// Socket send buffer, sk_sndbuf (net.core.wmem_default) [bytes].
    #[serde(default = "hackbench_sndbuf")]
    pub sndbuf: Bytes,
    /// When the parent starts.
    #[serde(default)]
    pub start: Nanos,
}

fn hackbench_name() -> String {
    "hackbench".to_string()
}
fn hackbench_fds() -> u64 {
    20
}
fn hackbench_loops() -> u64 {
    100
}
fn hackbench_datasize() -> Bytes {
    Bytes(100)
}
fn hackbench_wss() -> Bytes {
    Bytes(16 << 10)
}
fn hackbench_sndbuf() -> Bytes {
    Bytes(212_992)
}

impl WorkloadSpec for HackbenchSpec {
    fn validate(&self, i: usize, m: &Machine) -> Result<u64> {
        let h = self;
        let at = format!("[[hackbench]] #{} \"{}\"", i + 1, clip(&h.name));
        let inv = |msg: String| Err(Error::Invalid(format!("{at}: {msg}")));
        if h.name.is_empty() || h.name.len() > 15 || h.name.contains(char::is_whitespace) {
            return inv("name must be 1..15 characters without spaces (TASK_COMM_LEN)".into());
        }
        if h.groups == 0 || h.fds == 0 || h.loops == 0 {
            return inv("groups, fds and loops must be >= 1".into());
        }
        for (key, v) in [("groups", h.groups), ("fds", h.fds), ("loops", h.loops)] {
            if let Some(msg) = table_knob_named("[[hackbench]]", key).exceeds(v, &v) {
                return inv(msg);
            }
        }
        if h.datasize.0 == 0 || h.datasize.0 > 65536 {
            return inv("datasize must be 1B..64KiB".into());
        }
        if h.worker_memory.0 > m.memory.0 {
            return inv(format!(
                "worker_memory {} is larger than the machine's memory",
                h.worker_memory
            ));
        }
        if h.sndbuf.0 < 2048 {
            return inv("sndbuf must be at least 2KiB (SOCK_MIN_SNDBUF)".into());
        }
        // The parent and 2 × groups × fds workers.
        match h
            .groups
            .checked_mul(h.fds)
            .and_then(|w| w.checked_mul(2))
            .and_then(|w| w.checked_add(1))
        {
            Some(n) if n <= MAX_TASKS => Ok(n),
            _ => inv(format!(
                "{} groups × {} fds is {} tasks, above the maximum {MAX_TASKS}",
                h.groups,
                h.fds,
                (h.groups as u128) * (h.fds as u128) * 2 + 1
            )),
        }
    }

    fn spawn(&self, sc: &Scenario, eng: &mut Engine) {
        spawn_hackbench(eng, self, sc.machine.cpus as usize);
    }
}

/// Registers hackbench's parent, its workers (started when the parent forks them) and
/// their sockets.
fn spawn_hackbench(eng: &mut Engine, h: &HackbenchSpec, ncpu: usize) {
    let truesize = crate::net::af_unix::skb_truesize(h.datasize.0);
    let workers = 2 * h.groups * h.fds;
    let shared = Rc::new(RefCell::new(Shared {
        total: workers,
        running: workers,
        parent_wq: eng.new_waitqueue(),
        start_wq: eng.new_waitqueue(),
        ..Default::default()
    }));
    let parent_cpu = 0;
    let mut children = Vec::with_capacity(workers as usize);
    let mut cpu = 0usize;
    for _ in 0..h.groups {
        let mut socks = Vec::with_capacity(h.fds as usize);
        for _ in 0..h.fds {
            let (r, w) = (eng.new_waitqueue(), eng.new_waitqueue());
            let s = eng.kernel.sockets.len();
            eng.kernel
                .sockets
                .push(crate::net::af_unix::UnixSock::new(h.sndbuf.0, r, w));
            socks.push(s);
        }
        // Receivers first, then the senders that share the group's sockets (group()).
        let roles = socks
            .iter()
            .map(|&sock| Role::Receiver { sock })
            .chain((0..h.fds).map(|_| Role::Sender {
                socks: socks.clone(),
            }));
        for role in roles {
            let prog = Worker::new(
                Rc::clone(&shared),
                role,
                h.worker_memory.0,
                h.worker_wss.0,
                truesize,
                h.fds * h.loops,
            );
            children.push(eng.spawn_deferred(&h.name, cpu % ncpu, Box::new(prog)));
            cpu += 1;
        }
    }
    eng.spawn(
        &h.name,
        parent_cpu,
        h.start.0,
        false,
        Box::new(Parent::new(shared, children)),
    );
}

/// What the parent and its workers share (the ready pipe and the wake-up fd).
#[derive(Debug, Default)]
pub struct Shared {
    /// Workers in all.
    pub total: u64,
    /// Workers that reported ready.
    pub ready: u64,
    /// Workers still running.
    pub running: u64,
    /// The parent's wait queue.
    pub parent_wq: usize,
    /// The queue workers wait on for the start (the wakefd poll).
    pub start_wq: usize,
    /// When the parent started the clock [ns].
    pub start_ns: u64,
}

/// The parent process: forks the workers, starts them, waits for them.
pub struct Parent {
    shared: Rc<RefCell<Shared>>,
    children: Vec<TaskId>,
    forked: usize,
    started: bool,
}

impl Parent {
    /// A parent that will fork `children` (already registered, not yet started).
    pub fn new(shared: Rc<RefCell<Shared>>, children: Vec<TaskId>) -> Self {
        Parent {
            shared,
            children,
            forked: 0,
            started: false,
        }
    }
}

impl Program<Kernel> for Parent {
    fn step(&mut self, cx: &mut StepCtx) -> StepOut {
        // wait(): the parent also notices workers the OOM killer removed (1 s poll).
        let wait = |wq| StepOut {
            user_ns: 0,
            next: Step::Block {
                wq,
                timeout: Some(1_000_000_000),
            },
        };
        // group(): fork the workers one by one (copy_process runs in the parent).
        while self.forked < self.children.len() {
            if cx.k.mm.cur.acc >= cx.quantum {
                return StepOut {
                    user_ns: 0,
                    next: Step::Run,
                };
            }
            let child = self.children[self.forked];
            match cx
                .k
                .copy_process_from(cx.tid, child, cx.now + cx.k.mm.cur.acc)
            {
                AllocResult::Page(_) => self.forked += 1,
                // Throttled in reclaim: sleep, then fork again.
                AllocResult::Retry => {
                    return StepOut {
                        user_ns: 0,
                        next: Step::Run,
                    }
                }
                // fork() failed: hackbench gives up ("fork()" barf); the parent exits.
                AllocResult::Failed | AllocResult::Killed => {
                    return StepOut {
                        user_ns: 0,
                        next: Step::Exit,
                    }
                }
            }
        }
        let dead = self
            .children
            .iter()
            .filter(|&&c| {
                !cx.k.tasks[c as usize].alive && cx.k.tasks[c as usize].stats.start_ns > 0
            })
            .count() as u64;
        let sh = self.shared.borrow();
        if !self.started {
            if sh.ready < sh.total {
                return wait(sh.parent_wq);
            }
            drop(sh);
            // gettimeofday(&start); write(wakefd, …)
            self.started = true;
            let mut sh = self.shared.borrow_mut();
            sh.start_ns = cx.now + cx.k.mm.cur.acc;
            cx.k.mm.cur.wake.push(sh.start_wq);
            return StepOut {
                user_ns: 0,
                next: Step::Run,
            };
        }
        if sh.running > 0 && dead < sh.total {
            return wait(sh.parent_wq);
        }
        let secs = (cx.now + cx.k.mm.cur.acc).saturating_sub(sh.start_ns) as f64 / 1e9;
        cx.k.metrics.insert("hackbench_seconds".to_string(), secs);
        StepOut {
            user_ns: 0,
            next: Step::Exit,
        }
    }
}

/// A worker's role.
#[derive(Debug, Clone)]
pub enum Role {
    /// Writes `loops` rounds to every socket of the group.
    Sender {
        /// The group's sockets.
        socks: Vec<usize>,
    },
    /// Reads `packets` messages from its socket.
    Receiver {
        /// Its socket.
        sock: usize,
    },
}

/// A sender or receiver process.
pub struct Worker {
    shared: Rc<RefCell<Shared>>,
    role: Role,
    /// Pages faulted in before reporting ready.
    memory_pages: u64,
    /// Pages re-touched at every step.
    wss_pages: u64,
    truesize: u64,
    /// Messages left to send or receive.
    left: u64,
    /// Next receiver a sender writes to.
    next_fd: usize,
    touched: u64,
    phase: u8,
}

impl Worker {
    /// A worker that faults in `memory` bytes, re-touches `wss` bytes and moves `messages` messages.
    pub fn new(
        shared: Rc<RefCell<Shared>>,
        role: Role,
        memory: u64,
        wss: u64,
        truesize: u64,
        messages: u64,
    ) -> Self {
        Worker {
            shared,
            role,
            memory_pages: memory.div_ceil(PAGE_SIZE),
            wss_pages: wss.div_ceil(PAGE_SIZE),
            truesize,
            left: messages,
            next_fd: 0,
            touched: 0,
            phase: 0,
        }
    }

    /// Exits, telling the parent (a worker that dies before ready() counts as ready).
    fn exit(&mut self, cx: &mut StepCtx, user: u64) -> StepOut {
        let mut sh = self.shared.borrow_mut();
        if self.phase == 0 {
            self.phase = 1;
            sh.ready += 1;
        }
        sh.running -= 1;
        if sh.running == 0 || sh.ready == sh.total {
            cx.k.mm.cur.wake.push(sh.parent_wq);
        }
        StepOut {
            user_ns: user,
            next: Step::Exit,
        }
    }
}

impl Program<Kernel> for Worker {
    fn step(&mut self, cx: &mut StepCtx) -> StepOut {
        let mut user = 0u64;
        let msg_user = cx.k.mm.cost.msg_user;
        if self.phase == 0 {
            // Fault in the worker's memory (its copy-on-write and heap pages), then ready().
            while self.touched < self.memory_pages {
                if user + cx.k.mm.cur.acc >= cx.quantum {
                    return StepOut {
                        user_ns: user,
                        next: Step::Run,
                    };
                }
                match cx.k.handle_mm_fault(cx.tid, self.touched) {
                    Fault::Access | Fault::Minor => user += cx.k.mm.cost.touch_page,
                    // Read back from swap: the touch completes after the sleep.
                    Fault::Major => {
                        self.touched += 1;
                        return StepOut {
                            user_ns: user,
                            next: Step::Run,
                        };
                    }
                    Fault::Retry => {
                        return StepOut {
                            user_ns: user,
                            next: Step::Run,
                        }
                    }
                    Fault::Failed | Fault::Killed => return self.exit(cx, user),
                }
                self.touched += 1;
            }
            self.phase = 1;
            let mut sh = self.shared.borrow_mut();
            sh.ready += 1;
            if sh.ready == sh.total {
                cx.k.mm.cur.wake.push(sh.parent_wq);
            }
            return StepOut {
                user_ns: user,
                next: Step::Block {
                    wq: sh.start_wq,
                    timeout: None,
                },
            };
        }
        // The stack and data the loop uses.
        for i in 0..self.wss_pages.min(self.memory_pages).max(1) {
            match cx.k.handle_mm_fault(cx.tid, i) {
                Fault::Access | Fault::Minor => user += cx.k.mm.cost.touch_page,
                // Sleep for the swap-in or the reclaim throttle; the loop re-touches after.
                Fault::Major | Fault::Retry => {
                    return StepOut {
                        user_ns: user,
                        next: Step::Run,
                    }
                }
                Fault::Failed | Fault::Killed => return self.exit(cx, user),
            }
        }
        let cpu = cx.k.tasks[cx.tid as usize].cpu;
        loop {
            if self.left == 0 {
                return self.exit(cx, user);
            }
            if user + cx.k.mm.cur.acc >= cx.quantum {
                return StepOut {
                    user_ns: user,
                    next: Step::Run,
                };
            }
            match &self.role {
                Role::Sender { socks } => {
                    let s = socks[self.next_fd];
                    match cx.k.unix_stream_sendmsg(cx.tid, s, self.truesize) {
                        Send::Sent => {
                            user += msg_user;
                            self.left -= 1;
                            self.next_fd = (self.next_fd + 1) % socks.len();
                        }
                        Send::Full => {
                            let wq = cx.k.sockets[s].writer_wq;
                            return StepOut {
                                user_ns: user,
                                next: Step::Block { wq, timeout: None },
                            };
                        }
                        Send::Retry => {
                            return StepOut {
                                user_ns: user,
                                next: Step::Run,
                            }
                        }
                        Send::Failed => return self.exit(cx, user),
                    }
                }
                Role::Receiver { sock } => {
                    let s = *sock;
                    let per = cx.k.mm.cost.unix_recvmsg + msg_user;
                    let budget = cx.quantum.saturating_sub(user + cx.k.mm.cur.acc);
                    let max = (budget / per.max(1)).max(1).min(self.left);
                    let n = cx.k.unix_stream_recvmsg(s, max, self.truesize, cpu);
                    if n == 0 {
                        let wq = cx.k.sockets[s].reader_wq;
                        return StepOut {
                            user_ns: user,
                            next: Step::Block { wq, timeout: None },
                        };
                    }
                    user += n * msg_user;
                    self.left -= n;
                }
            }
        }
    }
}
