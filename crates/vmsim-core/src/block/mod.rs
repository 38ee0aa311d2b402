//! Block devices: request queue, bandwidth, latency and congestion.
//!
//! One [`BlockDevice`] is the request queue of one disk in simulated time,
//! split the way the kernel splits it:
//!
//! - [`blk_core`] — block/blk-core.c: request slots (`get_request`,
//!   `freed_request`), the congestion thresholds, the service channel and the
//!   dispatch order of the I/O scheduler.
//! - [`backing_dev`] — mm/backing-dev.c: the congestion bits as reclaim and
//!   writeback see them, and `congestion_wait`.
//! - [`blk_wbt`] — block/blk-wbt.c: writeback throttling, the tokens buffered and
//!   swap writes hold while in flight.
//! - [`genhd`] — block/genhd.c: the /proc/diskstats counters.
//!
//! The device is a pure, deterministic data structure driven by the caller's
//! clock: it never schedules anything itself.
//!
//! # Contract for the engine
//!
//! - Call with non-decreasing `now` [ns].
//! - After every `submit`, (re)schedule one device event at
//!   [`BlockDevice::next_completion_at`]; at that event call
//!   [`BlockDevice::complete_until`] and schedule the next one. A stale
//!   event is harmless: `complete_until` then returns nothing.
//! - [`Submitted::Full`] queued nothing: the submitter sleeps until
//!   `retry_at` and submits again (`get_request_wait`); so does
//!   [`Submitted::Throttled`] (`wbt_wait`), and other requests go past it.
//! - Reclaim asks [`BlockDevice::bdi_write_congested`] and sleeps until
//!   [`congestion_wait_all`] (or [`BlockDevice::congestion_wait`] with one disk).
//!
//! ```
//! use vmsim_core::block::{BlockConfig, BlockDevice, Request, Submitted};
//!
//! let mut sda = BlockDevice::new(BlockConfig::sata_2010());
//! // Write back 1 MiB (256 pages) at sector 0: two 512 KiB requests.
//! let Submitted::Queued { completes_at } = sda.submit(0, Request::write(0, 256, 7, false)) else {
//!     unreachable!()
//! };
//! assert_eq!(sda.next_completion_at(), Some(8_000_000 + 8_738_134));
//! let done = sda.complete_until(completes_at);
//! assert_eq!(done.len(), 2);
//! assert!(done[1].last && done[1].completed_at == completes_at);
//! ```

pub mod backing_dev;
pub mod blk_core;
pub mod blk_wbt;
pub mod genhd;
pub mod zram;

pub use backing_dev::congestion_wait_all;
pub use blk_core::{
    BlkRw, BlockConfig, BlockDevice, Completion, Op, Request, Service, Submitted, PAGE_SIZE,
    SECTOR_SIZE,
};
pub use blk_wbt::WbtKind;
pub use genhd::DiskStats;

#[cfg(test)]
mod tests;
