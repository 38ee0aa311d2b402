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

/// Most changes a run records: about 220 MB of `vmsim run --perfetto` JSON, and what
/// its Python side reads in a couple of GB.
pub const MAX_STATE_CHANGES: usize = 2_000_000;

/// The changes noted during a run, in the order the engine noted them: a task's changes
/// are in time order except for states it was to enter after a sleep that an OOM kill
/// cut short (its `Dead` then comes at the kill, before them; readers drop them).
#[derive(Debug, Clone)]
pub struct StateLog {
    /// The changes.
    pub changes: Vec<StateChange>,
    /// Most changes kept.
    pub limit: usize,
    /// The engine's time when a change was first not kept, the log being full: every
    /// lane is whole before it [ns].
    pub full_at: Option<u64>,
}

impl Default for StateLog {
    fn default() -> StateLog {
        StateLog::with_limit(MAX_STATE_CHANGES)
    }
}

impl StateLog {
    /// An empty log that keeps at most `limit` changes.
    pub fn with_limit(limit: usize) -> StateLog {
        StateLog {
            changes: Vec::new(),
            limit,
            full_at: None,
        }
    }

    /// Notes, at engine time `now`, that `tid` enters `state` at `at` (`at` >= `now`
    /// but for a kill cutting a planned state short).
    #[inline]
    pub fn note(&mut self, now: u64, at: u64, tid: TaskId, state: TaskTimelineState) {
        if self.changes.len() < self.limit {
            self.changes.push((at, tid, state as u8));
        } else if self.full_at.is_none() {
            self.full_at = Some(now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_log_keeps_its_changes_and_says_when_it_filled() {
        let mut log = StateLog::with_limit(2);
        log.note(0, 0, 1, TaskTimelineState::Runnable);
        log.note(5, 5, 1, TaskTimelineState::Running);
        assert_eq!(log.full_at, None);
        log.note(7, 9, 1, TaskTimelineState::Sleeping);
        log.note(8, 8, 2, TaskTimelineState::Runnable);
        assert_eq!(log.changes, vec![(0, 1, 0), (5, 1, 1)]);
        assert_eq!(log.full_at, Some(7));
    }
}
