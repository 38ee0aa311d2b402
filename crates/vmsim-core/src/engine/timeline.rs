//! Each task's scheduling states over time, as `vmsim run --perfetto` draws them: the
//! engine notes every change of state when a run asks for it (sched_switch and
//! sched_wakeup are where the kernel's tracers see the same changes).
//!
//! Off by default: the engine then tests one `Option` per change and records nothing.

use super::task::TaskId;

/// What a task is doing from a change on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum TaskTimelineState {
    /// On a run queue, waiting for a CPU (TASK_RUNNING, not on a CPU).
    Runnable = 0,
    /// On a CPU: user time, system time, the context switch to it.
    Running = 1,
    /// Asleep by its own choice: a timer, a wait queue of its program.
    Sleeping = 2,
    /// Asleep in a throttle: reclaim_throttle, balance_dirty_pages, congestion_wait,
    /// the memory.high penalty, the reclaimer limit's wait queue.
    Throttled = 3,
    /// Asleep waiting for I/O it started or needs (io_schedule).
    IoWait = 4,
    /// Exited or killed.
    Dead = 5,
}

/// Names of the states, by their number.
pub const TIMELINE_STATES: [&str; 6] = [
    "runnable",
    "running",
    "sleeping",
    "throttled",
    "io_wait",
    "dead",
];

/// One change of a task's state: (time [ns], task, state number).
pub type StateChange = (u64, TaskId, u8);

/// The changes noted during a run, in the order the engine noted them: a task's changes
/// are in time order except for states it was to enter after a sleep that an OOM kill
/// cut short (its `Dead` then comes at the kill, before them; readers drop them).
#[derive(Debug, Clone, Default)]
pub struct StateLog {
    /// The changes.
    pub changes: Vec<StateChange>,
}

impl StateLog {
    /// Notes that `tid` enters `state` at `at`.
    #[inline]
    pub fn note(&mut self, at: u64, tid: TaskId, state: TaskTimelineState) {
        self.changes.push((at, tid, state as u8));
    }
}
