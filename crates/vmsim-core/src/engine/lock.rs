//! Contended locks and wait queues.
//!
//! A [`ContendedLock`] models a spinlock such as `zone->lock` or
//! `lruvec->lru_lock` in simulated time: holders are served first come, first
//! served, and a CPU that arrives while the lock is held spins — the wait is
//! system time on that CPU, as it is in the kernel. Because every operation
//! runs at an event's timestamp, the lock only needs to remember when it next
//! becomes free.
//!
//! A [`WaitQueue`] models `wait_queue_head_t`: tasks sleep on it until woken
//! one at a time or all at once (`wake_up`, `wake_up_all`), optionally with a
//! timeout scheduled by the engine.

use std::collections::VecDeque;

/// A spinlock in simulated time.
#[derive(Debug, Clone, Default)]
pub struct ContendedLock {
    /// Time at which the current holder releases it [ns].
    free_at: u64,
    /// Acquisitions.
    pub acquisitions: u64,
    /// Acquisitions that had to spin (lock_stat "contentions").
    pub contentions: u64,
    /// Total time spent spinning by all CPUs [ns].
    pub wait_ns: u64,
    /// Longest single spin [ns].
    pub max_wait_ns: u64,
    /// Total time held [ns].
    pub hold_ns: u64,
}

impl ContendedLock {
    /// A free lock.
    pub fn new() -> Self {
        Self::default()
    }

    /// Acquires at `now`, holds for `hold` [ns], releases; returns the spin time [ns].
    ///
    /// The caller is busy (spinning, then in the critical section) for
    /// `spin + hold` nanoseconds of system time.
    #[inline]
    pub fn acquire(&mut self, now: u64, hold: u64) -> u64 {
        let start = self.free_at.max(now);
        let spin = start - now;
        self.free_at = start + hold;
        self.acquisitions += 1;
        self.hold_ns += hold;
        if spin > 0 {
            self.contentions += 1;
            self.wait_ns += spin;
            self.max_wait_ns = self.max_wait_ns.max(spin);
        }
        spin
    }

    /// Whether the lock is held at `now` (spin_is_locked).
    pub fn is_locked(&self, now: u64) -> bool {
        self.free_at > now
    }
}

pub use super::task::TaskId;

/// Tasks sleeping until an event (wait_queue_head_t).
#[derive(Debug, Clone, Default)]
pub struct WaitQueue {
    waiters: VecDeque<TaskId>,
    /// Most tasks ever waiting at once.
    pub max_waiters: usize,
}

impl WaitQueue {
    /// An empty queue.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `t` at the tail (prepare_to_wait).
    pub fn add(&mut self, t: TaskId) {
        debug_assert!(!self.waiters.contains(&t));
        self.waiters.push_back(t);
        self.max_waiters = self.max_waiters.max(self.waiters.len());
    }

    /// Removes `t` if present (finish_wait after a timeout); returns whether it was there.
    pub fn remove(&mut self, t: TaskId) -> bool {
        if let Some(i) = self.waiters.iter().position(|&w| w == t) {
            self.waiters.remove(i);
            true
        } else {
            false
        }
    }

    /// Takes the first waiter (wake_up with one exclusive waiter).
    pub fn wake_one(&mut self) -> Option<TaskId> {
        self.waiters.pop_front()
    }

    /// Takes every waiter in arrival order (wake_up_all).
    pub fn wake_all(&mut self) -> Vec<TaskId> {
        self.waiters.drain(..).collect()
    }

    /// Number of waiters.
    pub fn len(&self) -> usize {
        self.waiters.len()
    }

    /// Whether nobody waits (waitqueue_active is false).
    pub fn is_empty(&self) -> bool {
        self.waiters.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uncontended_lock_costs_nothing_extra() {
        let mut l = ContendedLock::new();
        assert_eq!(l.acquire(100, 50), 0);
        assert_eq!(l.acquire(200, 50), 0);
        assert_eq!(l.contentions, 0);
    }

    #[test]
    fn contended_lock_serialises_holders() {
        let mut l = ContendedLock::new();
        // Three CPUs arrive at t=0 wanting 100ns each: they finish at 100, 200, 300.
        assert_eq!(l.acquire(0, 100), 0);
        assert_eq!(l.acquire(0, 100), 100);
        assert_eq!(l.acquire(0, 100), 200);
        assert_eq!(l.contentions, 2);
        assert_eq!(l.wait_ns, 300);
        assert_eq!(l.max_wait_ns, 200);
        assert!(l.is_locked(299));
        assert!(!l.is_locked(300));
    }

    #[test]
    fn wait_queue_is_fifo() {
        let mut q = WaitQueue::new();
        q.add(3);
        q.add(1);
        q.add(2);
        assert_eq!(q.wake_one(), Some(3));
        assert!(q.remove(2));
        assert!(!q.remove(2));
        assert_eq!(q.wake_all(), vec![1]);
        assert!(q.is_empty());
        assert_eq!(q.max_waiters, 3);
    }
}
