//! Congestion as memory management sees it: the bdi congestion bits and congestion_wait.
//!
//! Models mm/backing-dev.c and include/linux/backing-dev.h of 2.6.3x:
//! `bdi_congested()`, `bdi_write_congested()`, `bdi_read_congested()`,
//! `clear_bdi_congested()` and `congestion_wait()`. The bits themselves are
//! set and cleared by the request queue (see [`super::blk_core`]); here they
//! are read at the caller's `now`, following the queue's projection, so a
//! caller can also ask *when* they will clear.
//!
//! `congestion_wait(sync, timeout)` sleeps on a global wait queue per class
//! that `clear_bdi_congested()` wakes. vmsim offers two models of the wake-up:
//!
//! - **Seed 001 rule** ([`BlockDevice::congestion_wait`],
//!   [`congestion_wait_all`]): with no congested device the sleeper sleeps
//!   the full timeout; with congestion it wakes when the first congested
//!   queue drops below the off threshold (103 of 128), or at the timeout.
//!   This is the rule in the seed notes and vmsim's default.
//! - **As the 2.6.35 code reads** ([`BlockDevice::congestion_wait_kernel`]):
//!   `__freed_request()` calls `clear_bdi_congested()` on *every* freed
//!   request that leaves its class below the off threshold, congested or
//!   not, and that wakes every sleeper of the class. So a sleeper also wakes
//!   at the next such completion on any device when nothing is congested.
//!
//! Simplification: sleepers are not tracked; the caller computes a wake-up
//! time when the task goes to sleep. A device that becomes congested later
//! (by a submission after the sleep began) does not shorten a sleep
//! computed earlier under the seed rule; under the kernel rule a new
//! submission can only add completions, so a caller that wants exactness
//! re-asks after each submission.

use super::blk_core::{BlkRw, BlockDevice};

impl BlockDevice {
    /// Whether class `rw` is congested at `now` (bdi_congested with BDI_{a,}sync_congested).
    pub fn is_congested(&self, now: u64, rw: BlkRw) -> bool {
        self.congested_at(now, rw)
    }

    /// Whether async writes are congested at `now` (bdi_write_congested).
    pub fn bdi_write_congested(&self, now: u64) -> bool {
        self.congested_at(now, BlkRw::Async)
    }

    /// Whether sync I/O is congested at `now` (bdi_read_congested).
    pub fn bdi_read_congested(&self, now: u64) -> bool {
        self.congested_at(now, BlkRw::Sync)
    }

    /// When class `rw` stops being congested if nothing else arrives; `None` if it is not congested at `now` [ns].
    ///
    /// That is the completion after which the class holds fewer than
    /// `nr_congestion_off` requests (clear_bdi_congested from __freed_request).
    pub fn congestion_clears_at(&self, now: u64, rw: BlkRw) -> Option<u64> {
        if !self.congested_at(now, rw) {
            return None;
        }
        self.next_free_below_off(now, rw)
    }

    /// Wake-up time of congestion_wait(BLK_RW_ASYNC, timeout) on this device alone, by the seed 001 rule [ns].
    ///
    /// `timeout` [ns]: HZ/10 is 100 ms, HZ/50 is 20 ms.
    pub fn congestion_wait(&self, now: u64, timeout: u64) -> u64 {
        self.congestion_wait_rw(now, BlkRw::Async, timeout)
    }

    /// Wake-up time of congestion_wait(rw, timeout) on this device alone, by the seed 001 rule [ns].
    pub fn congestion_wait_rw(&self, now: u64, rw: BlkRw, timeout: u64) -> u64 {
        congestion_wait_all(std::slice::from_ref(self), now, rw, timeout)
    }

    /// Next time __freed_request would call clear_bdi_congested for class `rw`, congested or not [ns].
    pub fn next_clear_bdi_congested(&self, now: u64, rw: BlkRw) -> Option<u64> {
        self.next_free_below_off(now, rw)
    }

    /// Wake-up time of congestion_wait(rw, timeout) as the 2.6.35 code behaves, on this device alone [ns].
    ///
    /// The sleeper wakes at the timeout or at the next [`Self::next_clear_bdi_congested`],
    /// whichever is first.
    pub fn congestion_wait_kernel(&self, now: u64, rw: BlkRw, timeout: u64) -> u64 {
        let deadline = now.saturating_add(timeout);
        match self.next_free_below_off(now, rw) {
            Some(t) => t.min(deadline),
            None => deadline,
        }
    }
}

/// Wake-up time of congestion_wait(rw, timeout) over all `devices`, by the seed 001 rule (mm/backing-dev.c) [ns].
///
/// The wait queue is global: the sleeper wakes when the first congested
/// device stops being congested, or at `now + timeout`. With no device
/// congested at `now` it sleeps the full timeout.
pub fn congestion_wait_all(devices: &[BlockDevice], now: u64, rw: BlkRw, timeout: u64) -> u64 {
    let deadline = now.saturating_add(timeout);
    devices
        .iter()
        .filter_map(|d| d.congestion_clears_at(now, rw))
        .fold(deadline, u64::min)
}
