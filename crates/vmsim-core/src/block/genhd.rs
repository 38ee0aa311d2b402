//! Per-device I/O counters and their /proc/diskstats line.
//!
//! Models `struct disk_stats` and `diskstats_show()` in block/genhd.c. Times
//! are kept in nanoseconds and printed in milliseconds, as 6.x kernels do.
//! Merges, discards and flushes are not modelled and print as 0. The
//! in-flight count, io_ticks and time_in_queue include queued requests, as
//! the single-queue block layer counted them from `drive_stat_acct()`, and
//! time_in_queue is the 2.6.3x integral of the in-flight count
//! (`part_round_stats()`); 6.x prints the sum of the requests' times instead,
//! which is the same number once every request has completed.
//! The congestion and full counters have no diskstats field; they are
//! vmsim's own, for reports.

use super::blk_core::{BlkRw, Op};
use serde::Serialize;
use std::fmt::Write as _;

/// I/O counters of one device (struct disk_stats plus congestion counts).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct DiskStats {
    /// Reads completed (ios[STAT_READ]) [requests].
    pub read_ios: u64,
    /// Sectors read (sectors[STAT_READ]) [sectors].
    pub read_sectors: u64,
    /// Time reads spent from submission to completion (nsecs[STAT_READ]) [ns].
    pub read_nsecs: u64,
    /// Writes completed (ios[STAT_WRITE]) [requests].
    pub write_ios: u64,
    /// Sectors written (sectors[STAT_WRITE]) [sectors].
    pub write_sectors: u64,
    /// Time writes spent from submission to completion (nsecs[STAT_WRITE]) [ns].
    pub write_nsecs: u64,
    /// Time with at least one request in flight (io_ticks) [ns].
    pub io_ticks: u64,
    /// In-flight count integrated over time (time_in_queue, "weighted") [ns].
    pub time_in_queue: u64,
    /// Most requests in flight at once, both classes [requests].
    pub max_in_flight: u32,
    /// Times the async class became congested (set_bdi_congested BLK_RW_ASYNC).
    pub async_congested: u64,
    /// Times the sync class became congested (set_bdi_congested BLK_RW_SYNC).
    pub sync_congested: u64,
    /// Async submissions refused for want of a slot (blk_set_queue_full).
    pub async_full: u64,
    /// Sync submissions refused for want of a slot (blk_set_queue_full).
    pub sync_full: u64,
    /// Extra requests created by splitting at max_sectors_kb [requests].
    pub splits: u64,
}

impl DiskStats {
    /// Counts a completed piece (blk_account_io_done).
    pub(super) fn note_completed(&mut self, op: Op, sectors: u64, nsecs: u64) {
        match op {
            Op::Read => {
                self.read_ios += 1;
                self.read_sectors += sectors;
                self.read_nsecs += nsecs;
            }
            Op::Write => {
                self.write_ios += 1;
                self.write_sectors += sectors;
                self.write_nsecs += nsecs;
            }
        }
    }

    /// Counts a class becoming congested.
    pub(super) fn note_congested(&mut self, rw: BlkRw) {
        match rw {
            BlkRw::Async => self.async_congested += 1,
            BlkRw::Sync => self.sync_congested += 1,
        }
    }

    /// Counts a refused submission.
    pub(super) fn note_full(&mut self, rw: BlkRw) {
        match rw {
            BlkRw::Async => self.async_full += 1,
            BlkRw::Sync => self.sync_full += 1,
        }
    }

    /// The device's line of /proc/diskstats (diskstats_show in block/genhd.c).
    pub fn diskstats_line(&self, major: u32, minor: u32, name: &str, in_flight: u32) -> String {
        let ms = |ns: u64| ns / 1_000_000;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{major:4} {minor:7} {name} {} 0 {} {} {} 0 {} {} {in_flight} {} {} 0 0 0 0 0 0",
            self.read_ios,
            self.read_sectors,
            ms(self.read_nsecs),
            self.write_ios,
            self.write_sectors,
            ms(self.write_nsecs),
            ms(self.io_ticks),
            ms(self.time_in_queue),
        );
        s
    }
}
