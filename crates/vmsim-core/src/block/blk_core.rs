//! The request queue of one block device in simulated time.
//!
//! Models block/blk-core.c of the 2.6.3x kernels (`get_request`,
//! `get_request_wait`, `freed_request`, `blk_queue_congestion_threshold`,
//! `drive_stat_acct`), the request size limit of block/blk-settings.c
//! (`BLK_DEF_MAX_SECTORS`) and, very roughly, the dispatch order of the I/O
//! schedulers of that era (block/deadline-iosched.c, block/cfq-iosched.c).
//!
//! **Request slots.** As in the kernel's `struct request_list`, sync and
//! async requests ([`BlkRw`]) each have `nr_requests` slots. A request holds
//! its slot from submission until it completes. A submitter that finds its
//! class full gets [`Submitted::Full`] with the time the first slot frees,
//! and decides itself whether to sleep (`get_request_wait`).
//!
//! **Congestion.** Per class, as `get_request` and `__freed_request` do it:
//! the class becomes congested when a new request takes the count to
//! `nr_congestion_on` (113 of 128) and stops being congested when a freed
//! request takes it below `nr_congestion_off` (103 of 128).
//!
//! **Service.** One channel serves one request at a time. A request costs
//! `latency` unless it starts at the sector where the previous one ended,
//! plus `bytes / bandwidth`; the channel serves it no earlier than
//! `request_latency` after its submission (a per-request round trip that
//! requests in flight together overlap, as a virtual disk's or an NVMe
//! drive's do; 0 on the spinning disks of the seeds). Requests larger than `max_sectors_kb` are split,
//! as `bio_add_page()` stops a bio at the queue's `max_sectors`; each piece
//! takes a slot and completes on its own.
//!
//! **Shared service.** With `service = "shared"` the device serves every request in
//! flight at once, each at an equal share of the bandwidth (processor sharing), as a
//! virtual disk whose host serves its queue in parallel does: on this project's 6.18
//! guest (virtio-blk, tracefs `block:block_rq_issue`/`block_rq_complete`) two 4 MiB
//! readahead requests issued 30 µs apart complete within 7 µs of each other 6–7.5 ms
//! later, four within 21 µs, where one channel would complete the first at half the
//! time. A request is served from `request_latency` after its submission; sync
//! priority and the dispatch batches do not apply (nothing waits for a channel).
//!
//! **Dispatch order.** With `sync_priority` off the device is FIFO (noop).
//! With it on (the default), sync requests go first, as deadline prefers
//! reads and CFQ prefers sync queues, in batches: once async requests have
//! the channel they keep it for `async_batch` requests (deadline's
//! `fifo_batch` = 16), and after `sync_batch` sync requests in a row a waiting
//! async request gets its turn (deadline's `writes_starved` 2 × `fifo_batch`
//! 16 = 32). Within a class the order is FIFO.
//!
//! **Time.** Every method takes the caller's `now` [ns]; time never goes
//! backwards (an earlier `now` is treated as the latest one seen). The
//! device keeps the dispatch decisions already taken (a request whose service
//! started before `now`) and a *projection* of the rest assuming nothing
//! else arrives. A dispatch decision at instant `t` considers every request
//! submitted at or before `t`. Under FIFO the completion time returned by
//! [`BlockDevice::submit`] is exact; with sync priority a later sync
//! submission can delay queued requests (and, by making a later request
//! sequential, rarely advance one), so the engine should keep one event at
//! [`BlockDevice::next_completion_at`] and re-read it after every submit.
//!
//! Simplifications: no merging of adjacent requests (the caller submits
//! whole runs of pages), no plugging, no request batching allowance
//! (`ioc_batching` lets a woken task exceed `nr_requests` by half; here the
//! pieces of one split request may exceed it instead, and nothing else
//! may), no read-ahead or write cache in the drive, no timeouts, no
//! `rl->starved` cross-class wake-ups, no per-process fairness (CFQ time
//! slices) and no deadline expiry (`read_expire`, `write_expire`).

use super::blk_wbt::{RqWb, WbtKind};
use super::genhd::DiskStats;
use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Size of a page [bytes].
pub const PAGE_SIZE: u64 = 4096;
/// Size of a sector [bytes].
pub const SECTOR_SIZE: u64 = 512;
/// Sectors per page [sectors].
const SECTORS_PER_PAGE: u64 = PAGE_SIZE / SECTOR_SIZE;
/// Default request slots per class, BLKDEV_MAX_RQ in include/linux/blkdev.h [requests].
pub const BLKDEV_MAX_RQ: u32 = 128;
/// Default largest request, BLK_DEF_MAX_SECTORS (1024 sectors) [KiB].
pub const BLK_DEF_MAX_SECTORS_KB: u32 = 512;
/// Default readahead window (VM_READAHEAD_PAGES = SZ_128K / PAGE_SIZE) [KiB].
pub const VM_READAHEAD_KB: u32 = 128;
/// Largest read_ahead_kb accepted here (a sanity bound, 1 GiB) [KiB].
pub const MAX_READ_AHEAD_KB: u32 = 1 << 20;

/// Direction of a request (READ / WRITE, rq_data_dir).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Op {
    /// READ.
    Read,
    /// WRITE.
    Write,
}

/// Request class for slots and congestion (BLK_RW_ASYNC / BLK_RW_SYNC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlkRw {
    /// BLK_RW_ASYNC: async writes (writeback, pageout); `bdi_write_congested`.
    Async = 0,
    /// BLK_RW_SYNC: reads and sync writes; `bdi_read_congested`.
    Sync = 1,
}

impl BlkRw {
    /// Index into per-class arrays.
    #[inline]
    fn idx(self) -> usize {
        self as usize
    }
}

/// One I/O request as the caller submits it (a bio).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Direction.
    pub op: Op,
    /// Sync write (REQ_SYNC); reads are always sync.
    pub sync: bool,
    /// Length [pages].
    pub pages: u32,
    /// First sector on the device [sectors of 512 bytes].
    pub sector: u64,
    /// The caller's id, returned in every [`Completion`].
    pub tag: u64,
    /// How writeback throttling counts it.
    pub wbt: WbtKind,
}

impl Request {
    /// The same request as blk-wbt sees a `kind` write (a buffered or swap write).
    pub fn wbt(mut self, kind: WbtKind) -> Self {
        self.wbt = kind;
        self
    }

    /// A read of `pages` pages at `sector`.
    pub fn read(sector: u64, pages: u32, tag: u64) -> Self {
        Self {
            op: Op::Read,
            sync: true,
            pages,
            sector,
            tag,
            wbt: WbtKind::Untracked,
        }
    }

    /// A write of `pages` pages at `sector`, sync or async.
    pub fn write(sector: u64, pages: u32, tag: u64, sync: bool) -> Self {
        Self {
            op: Op::Write,
            sync,
            pages,
            sector,
            tag,
            wbt: WbtKind::Untracked,
        }
    }

    /// The request's class (rw_is_sync: reads and REQ_SYNC writes are sync).
    pub fn class(&self) -> BlkRw {
        if self.op == Op::Read || self.sync {
            BlkRw::Sync
        } else {
            BlkRw::Async
        }
    }
}

/// Outcome of [`BlockDevice::submit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    /// Queued; its last piece completes at `completes_at` [ns] if nothing else arrives.
    Queued {
        /// Projected completion of the request's last piece [ns].
        completes_at: u64,
    },
    /// The class has no free request slot (get_request failed); nothing was queued.
    Full {
        /// When the first slot of the class frees: get_request_wait's wake-up [ns].
        retry_at: u64,
    },
    /// Writeback throttling holds the write back (wbt_wait); nothing was queued.
    Throttled {
        /// When the completions ahead would wake the writer (wbt_rqw_done), as projected [ns].
        retry_at: u64,
    },
}

/// A finished request, or a finished piece of a split one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    /// The caller's id.
    pub tag: u64,
    /// Direction.
    pub op: Op,
    /// Class the request was counted in.
    pub class: BlkRw,
    /// First sector of this piece [sectors].
    pub sector: u64,
    /// Offset of this piece in the submitted request [pages].
    pub offset: u32,
    /// Length of this piece [pages].
    pub pages: u32,
    /// This piece ends the submitted request (all its pieces are done).
    pub last: bool,
    /// When the request was submitted [ns].
    pub submitted_at: u64,
    /// When the device started serving this piece [ns].
    pub started_at: u64,
    /// When this piece completed [ns].
    pub completed_at: u64,
}

/// A block device's parameters (struct queue_limits, nr_requests and the drive's speed).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields, default)]
pub struct BlockConfig {
    /// Name as /proc/diskstats prints it.
    pub name: String,
    /// Sustained read bandwidth [bytes/s].
    pub read_bandwidth: u64,
    /// Sustained write bandwidth [bytes/s].
    pub write_bandwidth: u64,
    /// Fixed cost of a request that does not start where the previous one ended (seek + rotation) [ns].
    pub latency: u64,
    /// Time every request takes from its submission before its data moves, in order or
    /// not, overlapping the requests in flight beside it: the command's round trip (on a
    /// virtual disk the hypervisor's), not a positioning of the one head [ns].
    pub request_latency: u64,
    /// Request slots per class, /sys/block/*/queue/nr_requests [requests].
    pub nr_requests: u32,
    /// Largest request; larger ones are split, /sys/block/*/queue/max_sectors_kb [KiB].
    pub max_sectors_kb: u32,
    /// Readahead window of files on it, /sys/block/*/queue/read_ahead_kb (bdi->ra_pages) [KiB].
    pub read_ahead_kb: u32,
    /// Dispatch sync requests before async ones (deadline/CFQ); off means FIFO (noop) [bool].
    pub sync_priority: bool,
    /// Sync requests dispatched in a row before a waiting async one gets the channel [requests].
    pub sync_batch: u32,
    /// Async requests dispatched in a row once async has the channel [requests].
    pub async_batch: u32,
    /// The disk says it is rotational (/sys/block/*/queue/rotational): swap on it has no
    /// SWP_SOLIDSTATE, so swap-in reads ahead by swap cluster (swap_use_vma_readahead) [bool].
    pub rotational: bool,
    /// How requests in flight share the device: one at a time (`fifo`, a disk's one
    /// head) or all at once at equal shares of the bandwidth (`shared`).
    pub service: Service,
    /// Writeback throttling's target read latency, /sys/block/*/queue/wbt_lat_usec; 0
    /// is off, as before 4.10 (block/blk-wbt.c) [µs].
    pub wbt_lat_usec: u64,
    /// The hardware queue's depth (/sys/block/*/mq/0/nr_tags), which caps blk-wbt's
    /// depth; 0 means `nr_requests` [requests].
    pub queue_depth: u32,
    /// The device has a volatile write cache (/sys/block/*/queue/write_cache "write
    /// back"): blk-wbt wakes a throttled writer only once its writes in flight are done [bool].
    pub write_cache: bool,
}

/// How the device serves the requests in flight.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Service {
    /// One request at a time, in the elevator's order.
    #[default]
    Fifo,
    /// Every request in flight at once, each at an equal share of the bandwidth.
    Shared,
}

impl Default for BlockConfig {
    fn default() -> Self {
        Self::sata_2010()
    }
}

impl BlockConfig {
    /// A not particularly fast single 7200 rpm SATA disk of 2010 (the seed 001 machines).
    ///
    /// - Bandwidth: the Hitachi Deskstar 7K500 specification (table 10,
    ///   <https://www.easymanua.ls/hitachi/hds725050kla360/manual?p=31>) gives a
    ///   sustained read rate of 64.8 MB/s in the outer zone and 31.0 MB/s in
    ///   the inner one; a fresh filesystem lives in the outer zones, so reads
    ///   are 65 MB/s. Writes at 60 MB/s are an **estimate** (write seeks and
    ///   settling are slightly slower in every such datasheet).
    /// - Latency 8 ms: 4.17 ms average rotational latency at 7200 rpm plus
    ///   about 4 ms of seek over the short distances within one filesystem
    ///   (**estimate**). A full-disk random read costs 12.9 ms on the same
    ///   drive (its table 12: 4096 random reads in 55.5 s / 1.05); Mel
    ///   Gorman calls his disks "not particularly fast" and gives no figure.
    /// - nr_requests 128 and max_sectors_kb 512 are the kernel defaults
    ///   (BLKDEV_MAX_RQ, BLK_DEF_MAX_SECTORS).
    /// - Sync priority with batches 32/16: deadline's `writes_starved` 2 ×
    ///   `fifo_batch` 16, and `fifo_batch` for async.
    pub fn sata_2010() -> Self {
        Self {
            name: "sda".to_string(),
            read_bandwidth: 65_000_000,
            write_bandwidth: 60_000_000,
            latency: 8_000_000,
            request_latency: 0,
            nr_requests: BLKDEV_MAX_RQ,
            max_sectors_kb: BLK_DEF_MAX_SECTORS_KB,
            read_ahead_kb: VM_READAHEAD_KB,
            sync_priority: true,
            sync_batch: 32,
            async_batch: 16,
            rotational: true,
            service: Service::Fifo,
            wbt_lat_usec: 0,
            queue_depth: 0,
            write_cache: false,
        }
    }

    /// A current SATA SSD (**estimates**: 530 MB/s read, 500 MB/s write, 100 µs per random request).
    ///
    /// The bandwidths are the SATA 3 ceiling most such drives reach; 100 µs
    /// is a typical queue-depth-1 random 4 KiB latency. One service channel
    /// means random throughput is that of queue depth 1 (10 k requests/s);
    /// a real SSD serves several requests at once and does several times
    /// more. nr_requests stays at the legacy 128 so the congestion
    /// thresholds are those of the single-queue block layer modelled here.
    pub fn ssd() -> Self {
        Self {
            name: "sda".to_string(),
            read_bandwidth: 530_000_000,
            write_bandwidth: 500_000_000,
            latency: 100_000,
            request_latency: 0,
            nr_requests: BLKDEV_MAX_RQ,
            max_sectors_kb: BLK_DEF_MAX_SECTORS_KB,
            read_ahead_kb: VM_READAHEAD_KB,
            sync_priority: true,
            sync_batch: 32,
            async_batch: 16,
            rotational: false,
            service: Service::Fifo,
            wbt_lat_usec: 0,
            queue_depth: 0,
            write_cache: false,
        }
    }

    /// The readahead window in pages (bdi->ra_pages).
    pub fn ra_pages(&self) -> u64 {
        self.read_ahead_kb as u64 * 1024 / PAGE_SIZE
    }

    /// The optimal I/O size in pages (bdi->io_pages: max_sectors in pages).
    pub fn io_pages(&self) -> u64 {
        (self.max_sectors_kb as u64 * 1024 / PAGE_SIZE).max(1)
    }

    /// Checks that the values are possible; the error names the bad key.
    pub fn validate(&self) -> Result<()> {
        let bad = |key: &str, what: &str| {
            Err(Error::Invalid(format!(
                "block device {}: {key} {what}",
                self.name
            )))
        };
        if self.read_bandwidth == 0 {
            return bad("read_bandwidth", "must be above 0 bytes/s");
        }
        if self.write_bandwidth == 0 {
            return bad("write_bandwidth", "must be above 0 bytes/s");
        }
        if self.nr_requests == 0 {
            return bad("nr_requests", "must be at least 1");
        }
        if self.max_sectors_kb < (PAGE_SIZE / 1024) as u32 {
            return bad("max_sectors_kb", "must be at least one page (4 KiB)");
        }
        if self.read_ahead_kb > MAX_READ_AHEAD_KB {
            return bad("read_ahead_kb", "must be at most 1048576 KiB (1 GiB)");
        }
        if self.sync_batch == 0 || self.async_batch == 0 {
            return bad("sync_batch/async_batch", "must be at least 1");
        }
        Ok(())
    }

    /// Congestion-on and congestion-off request counts (blk_queue_congestion_threshold in block/blk-core.c).
    pub fn congestion_thresholds(&self) -> (u32, u32) {
        let nr = self.nr_requests as i64;
        let on = (nr - nr / 8 + 1).min(nr);
        let off = (nr - nr / 8 - nr / 16 - 1).max(1);
        (on as u32, off as u32)
    }

    /// Largest request [pages].
    pub fn max_request_pages(&self) -> u32 {
        (self.max_sectors_kb as u64 * 1024 / PAGE_SIZE).max(1) as u32
    }

    /// Time to serve `pages` pages, with or without the positioning latency [ns].
    pub fn service_time(&self, op: Op, pages: u32, sequential: bool) -> u64 {
        let bw = match op {
            Op::Read => self.read_bandwidth,
            Op::Write => self.write_bandwidth,
        } as u128;
        let bytes = pages as u128 * PAGE_SIZE as u128;
        let transfer = (bytes * 1_000_000_000).div_ceil(bw) as u64;
        let seek = if sequential { 0 } else { self.latency };
        (transfer + seek).max(1)
    }
}

/// One piece of a submitted request, as it waits in the queue.
#[derive(Debug, Clone, Copy)]
struct Piece {
    /// Arrival order (unique, increasing).
    seq: u64,
    tag: u64,
    op: Op,
    class: BlkRw,
    sector: u64,
    offset: u32,
    pages: u32,
    last: bool,
    submitted_at: u64,
    wbt: WbtKind,
}

/// Virtual time of [`Shared`] in units of 2⁻²⁰ ns of one request's service.
const SHARED_SCALE: u128 = 1 << 20;

/// A piece served under [`Service::Shared`].
#[derive(Debug, Clone, Copy)]
struct SharedPiece {
    piece: Piece,
    /// Its service alone at the full bandwidth, positioning included [ns].
    work: u64,
    /// When its data starts to move: submission + request_latency [ns].
    ready: u64,
    /// When it started to be served [ns] (valid once active).
    start: u64,
}

/// The requests in flight of a [`Service::Shared`] device as of `t`, in the virtual
/// time of processor sharing: `v` grows at 1/n per ns with n requests being served, and
/// a request started at virtual time v₀ with service w ends when `v` reaches v₀ + w.
#[derive(Debug, Clone, Default)]
struct Shared {
    t: u64,
    v: u128,
    /// Requests being served by (virtual finish, arrival).
    active: std::collections::BinaryHeap<std::cmp::Reverse<(u128, u64)>>,
    /// Requests not yet ready, in arrival order (their ready times only grow).
    pending: VecDeque<u64>,
    pieces: std::collections::BTreeMap<u64, SharedPiece>,
}

impl Shared {
    /// Serves until `to` (or until nothing is left), handing each finished piece with its
    /// start and end to `done` in completion order.
    fn advance(&mut self, to: u64, mut done: impl FnMut(SharedPiece, u64)) {
        loop {
            let n = self.active.len() as u128;
            let next_done = self.active.peek().map(|std::cmp::Reverse((f, _))| {
                let dt = ((f - self.v) * n).div_ceil(SHARED_SCALE);
                (self.t + dt as u64, *f)
            });
            let next_ready = self
                .pending
                .front()
                .map(|seq| self.pieces[seq].ready.max(self.t));
            match (next_done, next_ready) {
                (Some((at, f)), r) if at <= to && r.is_none_or(|r| at <= r) => {
                    self.t = at;
                    self.v = f;
                    while let Some(&std::cmp::Reverse((f, seq))) = self.active.peek() {
                        if f > self.v {
                            break;
                        }
                        self.active.pop();
                        let p = self.pieces.remove(&seq).expect("an active piece");
                        done(p, at);
                    }
                }
                (_, Some(r)) if r <= to => {
                    self.pass(r);
                    while let Some(&seq) = self.pending.front() {
                        let p = self.pieces.get_mut(&seq).expect("a pending piece");
                        if p.ready > self.t {
                            break;
                        }
                        p.start = self.t;
                        let f = self.v + p.work as u128 * SHARED_SCALE;
                        self.active.push(std::cmp::Reverse((f, seq)));
                        self.pending.pop_front();
                    }
                }
                _ => {
                    if to != u64::MAX {
                        self.pass(to);
                    }
                    return;
                }
            }
        }
    }

    /// Moves time to `t` with the same requests being served.
    fn pass(&mut self, t: u64) {
        let n = self.active.len() as u128;
        if t > self.t && n > 0 {
            self.v += (t - self.t) as u128 * SHARED_SCALE / n;
        }
        self.t = self.t.max(t);
    }
}

/// A piece with its place on the service channel.
#[derive(Debug, Clone, Copy)]
struct Slot {
    piece: Piece,
    /// Service start [ns].
    start: u64,
    /// Service end = completion [ns].
    end: u64,
}

/// Where the disk head is and which class has been dispatched how often in a row.
#[derive(Debug, Clone, Copy, Default)]
struct DispatchState {
    /// Sector after the last dispatched piece.
    head: Option<u64>,
    /// Class of the last dispatched piece.
    last_class: Option<BlkRw>,
    /// Pieces of `last_class` dispatched in a row.
    run_len: u32,
}

impl DispatchState {
    fn dispatched(&mut self, p: &Piece) {
        if self.last_class == Some(p.class) {
            self.run_len += 1;
        } else {
            self.last_class = Some(p.class);
            self.run_len = 1;
        }
        self.head = Some(p.sector + p.pages as u64 * SECTORS_PER_PAGE);
    }
}

/// A block device's request queue (struct request_queue with its request_list and gendisk stats).
#[derive(Debug, Clone)]
pub struct BlockDevice {
    cfg: BlockConfig,
    nr_congestion_on: u32,
    nr_congestion_off: u32,
    max_pages: u32,
    /// Uncompleted pieces in service order: `[..committed]` have their
    /// dispatch decided, `[committed..]` are the projection.
    sched: VecDeque<Slot>,
    committed: usize,
    /// End of the last committed piece: when the channel frees [ns].
    free_at: u64,
    /// Dispatch state after the last committed piece.
    disp: DispatchState,
    /// rl->count[]: allocated request slots per class [requests].
    count: [u32; 2],
    /// BDI_async_congested / BDI_sync_congested.
    congested: [bool; 2],
    /// Completed pieces not yet handed to the caller.
    done: Vec<Completion>,
    /// Next arrival number.
    seq: u64,
    /// Latest time seen [ns].
    now: u64,
    /// Time up to which `stats` are rounded (part->stamp) [ns].
    stamp: u64,
    stats: DiskStats,
    /// Scratch queues for rescheduling, kept to avoid allocating.
    scratch: [VecDeque<Piece>; 2],
    /// The requests in flight under [`Service::Shared`] (`sched` is then their projection).
    shared: Shared,
    /// Writeback throttling, when `wbt_lat_usec` is set.
    wbt: Option<RqWb>,
}

impl BlockDevice {
    /// An idle device (blk_init_queue); panics if `cfg` fails [`BlockConfig::validate`].
    pub fn new(cfg: BlockConfig) -> Self {
        match Self::try_new(cfg) {
            Ok(d) => d,
            Err(e) => panic!("{e}"),
        }
    }

    /// An idle device, or the reason `cfg` is impossible.
    pub fn try_new(cfg: BlockConfig) -> Result<Self> {
        cfg.validate()?;
        let (on, off) = cfg.congestion_thresholds();
        let max_pages = cfg.max_request_pages();
        // wbt_init() when the queue has a target latency; its depth is the queue's.
        let wbt = (cfg.wbt_lat_usec > 0).then(|| {
            let depth = match cfg.queue_depth {
                0 => cfg.nr_requests,
                n => n,
            };
            RqWb::new(cfg.wbt_lat_usec, depth, cfg.write_cache)
        });
        Ok(Self {
            cfg,
            nr_congestion_on: on,
            nr_congestion_off: off,
            max_pages,
            sched: VecDeque::new(),
            committed: 0,
            free_at: 0,
            disp: DispatchState::default(),
            count: [0; 2],
            congested: [false; 2],
            done: Vec::new(),
            seq: 0,
            now: 0,
            stamp: 0,
            stats: DiskStats::default(),
            scratch: [VecDeque::new(), VecDeque::new()],
            shared: Shared::default(),
            wbt,
        })
    }

    /// The device's parameters.
    pub fn config(&self) -> &BlockConfig {
        &self.cfg
    }

    /// Count at which a class becomes congested (queue_congestion_on_threshold) [requests].
    pub fn congestion_on_threshold(&self) -> u32 {
        self.nr_congestion_on
    }

    /// Count below which a class stops being congested (queue_congestion_off_threshold) [requests].
    pub fn congestion_off_threshold(&self) -> u32 {
        self.nr_congestion_off
    }

    /// Counters as of the last `submit` or `complete_until` (part_stat_read).
    pub fn stats(&self) -> &DiskStats {
        &self.stats
    }

    /// The /proc/diskstats line of this device as of the last call (diskstats_show in block/genhd.c).
    pub fn diskstats(&self, major: u32, minor: u32) -> String {
        self.stats
            .diskstats_line(major, minor, &self.cfg.name, self.count[0] + self.count[1])
    }

    /// Number of pieces a request of `pages` pages is split into.
    pub fn pieces_for(&self, pages: u32) -> u32 {
        pages.div_ceil(self.max_pages)
    }

    /// Submits `req` at `now` (get_request, then add_request to the elevator).
    ///
    /// Finished requests up to `now` are retired first, so their slots are
    /// free. A request of zero pages does nothing and "completes" at once,
    /// with no [`Completion`].
    pub fn submit(&mut self, now: u64, req: Request) -> Submitted {
        self.retire(now);
        let now = self.now;
        if req.pages == 0 {
            return Submitted::Queued { completes_at: now };
        }
        let class = req.class();
        let c = class.idx();
        let nr = self.cfg.nr_requests;
        if self.count[c] >= nr {
            // get_request_wait sleeps until __freed_request sees count + 1 <= nr_requests.
            self.stats.note_full(class);
            let k = self.count[c] - nr + 1;
            let retry_at = self
                .nth_free(class, k)
                .expect("a full class has requests in flight");
            return Submitted::Full { retry_at };
        }
        let n = self.pieces_for(req.pages);
        if let Some(w) = self.wbt.as_mut() {
            if !w.throttle(now, req.wbt, n) {
                let retry_at = self.wbt_wake_at(req.wbt, now);
                return Submitted::Throttled { retry_at };
            }
        }
        self.round_stats(now);
        let mut new = Vec::with_capacity(n as usize);
        for i in 0..n {
            let offset = i * self.max_pages;
            let pages = self.max_pages.min(req.pages - offset);
            // get_request: set congested when this request takes the count to the on threshold.
            if self.count[c] + 1 >= self.nr_congestion_on && !self.congested[c] {
                self.congested[c] = true;
                self.stats.note_congested(class);
            }
            self.count[c] += 1;
            new.push(Piece {
                seq: self.seq,
                tag: req.tag,
                op: req.op,
                class,
                sector: req.sector + offset as u64 * SECTORS_PER_PAGE,
                offset,
                pages,
                last: i + 1 == n,
                submitted_at: now,
                wbt: req.wbt,
            });
            self.seq += 1;
        }
        self.stats.splits += (n - 1) as u64;
        self.stats.max_in_flight = self.stats.max_in_flight.max(self.count[0] + self.count[1]);
        let last_seq = self.seq - 1;
        self.reschedule(now, new);
        let completes_at = self
            .sched
            .iter()
            .find(|s| s.piece.seq == last_seq)
            .map(|s| s.end)
            .expect("a queued piece is scheduled");
        Submitted::Queued { completes_at }
    }

    /// Retires every piece finished by `now` and returns them in completion order (blk_end_request).
    pub fn complete_until(&mut self, now: u64) -> Vec<Completion> {
        self.retire(now);
        let now = self.now;
        self.round_stats(now);
        std::mem::take(&mut self.done)
    }

    /// Whether pieces completed that [`BlockDevice::complete_until`] has not handed out yet (a
    /// submission retires what ended before it).
    pub fn has_completed(&self) -> bool {
        !self.done.is_empty()
    }

    /// Time of the next completion if nothing else arrives: the engine's next device event [ns].
    pub fn next_completion_at(&self) -> Option<u64> {
        self.sched.front().map(|s| s.end)
    }

    /// When a writer of `kind` held back by writeback throttling would be woken, from the
    /// projected completions (or the throttle's next window, or the next completion) [ns].
    fn wbt_wake_at(&self, kind: WbtKind, now: u64) -> u64 {
        let ends = self
            .sched
            .iter()
            .filter_map(|s| s.piece.wbt.rqw().map(|i| (s.end, i)));
        self.wbt
            .as_ref()
            .and_then(|w| w.wake_at(kind, now, ends))
            .or(self.next_completion_at())
            .unwrap_or(now + 1)
            .max(now + 1)
    }

    /// Records a writer's sleep in balance_dirty_pages (bdi->last_bdp_sleep), which lets
    /// writeback throttling use its full depth for a second (wb_recent_wait).
    pub fn note_bdp_sleep(&mut self, now: u64) {
        if let Some(w) = self.wbt.as_mut() {
            w.note_bdp_sleep(now);
        }
    }

    /// The writeback throttle, when the device has one.
    pub fn wbt(&self) -> Option<&RqWb> {
        self.wbt.as_ref()
    }

    /// When the queued writes will have completed more than `pages` pages, counting a
    /// request's pages when its last piece completes, if the queue holds that many [ns].
    pub fn writes_done_at(&self, pages: u64) -> Option<u64> {
        let mut n = 0u64;
        for s in &self.sched {
            if s.piece.op == Op::Write {
                n += s.piece.pages as u64;
                if s.piece.last && n > pages {
                    return Some(s.end);
                }
            }
        }
        None
    }

    /// Projected completion of the last piece of the request tagged `tag`, if it is still queued [ns].
    pub fn projected_completion(&self, tag: u64) -> Option<u64> {
        self.sched
            .iter()
            .find(|s| s.piece.tag == tag && s.piece.last)
            .map(|s| s.end)
    }

    /// Allocated request slots of a class at `now` (rl->count[sync]) [requests].
    pub fn in_flight(&self, now: u64, rw: BlkRw) -> u32 {
        let now = now.max(self.now);
        let freed = self
            .sched
            .iter()
            .take_while(|s| s.end <= now)
            .filter(|s| s.piece.class == rw)
            .count() as u32;
        self.count[rw.idx()] - freed
    }

    /// Whether nothing is queued or in service at `now`.
    pub fn is_idle(&self, now: u64) -> bool {
        let now = now.max(self.now);
        self.sched.back().is_none_or(|s| s.end <= now)
    }

    /// Congestion flag of a class at `now`, following the projection.
    pub(super) fn congested_at(&self, now: u64, rw: BlkRw) -> bool {
        // The flag is only cleared by a free that leaves the count below the
        // off threshold, and between calls counts only fall.
        self.congested[rw.idx()] && self.in_flight(now, rw) >= self.nr_congestion_off
    }

    /// Time of the `k`-th (from 1) projected completion of class `rw` [ns].
    pub(super) fn nth_free(&self, rw: BlkRw, k: u32) -> Option<u64> {
        if k == 0 {
            return None;
        }
        self.sched
            .iter()
            .filter(|s| s.piece.class == rw)
            .nth(k as usize - 1)
            .map(|s| s.end)
    }

    /// First projected completion of class `rw` after `now` that leaves its count below the off threshold [ns].
    ///
    /// That is when __freed_request calls clear_bdi_congested, which wakes
    /// every congestion_wait sleeper of the class whether or not the class
    /// was congested.
    pub(super) fn next_free_below_off(&self, now: u64, rw: BlkRw) -> Option<u64> {
        let now = now.max(self.now);
        let mut count = self.count[rw.idx()];
        for s in self.sched.iter().filter(|s| s.piece.class == rw) {
            count -= 1;
            if s.end > now && count < self.nr_congestion_off {
                return Some(s.end);
            }
        }
        None
    }

    /// Takes dispatch decisions made before `now` and retires pieces finished by `now`.
    fn retire(&mut self, now: u64) {
        debug_assert!(now >= self.now, "block device time went backwards");
        let now = now.max(self.now);
        self.now = now;
        if self.cfg.service == Service::Shared {
            return self.retire_shared(now);
        }
        // Decisions at instants before `now` saw every request there is.
        while self.committed < self.sched.len() && self.sched[self.committed].start < now {
            let s = self.sched[self.committed];
            self.free_at = s.end;
            self.disp.dispatched(&s.piece);
            self.committed += 1;
        }
        // A piece that ended by `now` started before it (service ≥ 1 ns), so it is committed.
        while self.committed > 0 && self.sched[0].end <= now {
            let s = self.sched.pop_front().expect("committed slot");
            self.committed -= 1;
            self.freed_request(s);
        }
    }

    /// A piece completed: account it and free its slot (freed_request / __freed_request).
    fn freed_request(&mut self, s: Slot) {
        self.round_stats(s.end);
        let p = s.piece;
        let c = p.class.idx();
        self.count[c] -= 1;
        if self.count[c] < self.nr_congestion_off {
            self.congested[c] = false; // blk_clear_queue_congested
        }
        if let Some(w) = self.wbt.as_mut() {
            w.done(s.end, p.wbt, p.op == Op::Read, s.end - p.submitted_at);
        }
        self.stats.note_completed(
            p.op,
            p.pages as u64 * SECTORS_PER_PAGE,
            s.end - p.submitted_at,
        );
        self.done.push(Completion {
            tag: p.tag,
            op: p.op,
            class: p.class,
            sector: p.sector,
            offset: p.offset,
            pages: p.pages,
            last: p.last,
            submitted_at: p.submitted_at,
            started_at: s.start,
            completed_at: s.end,
        });
    }

    /// Accounts in-flight time up to `t` (part_round_stats).
    fn round_stats(&mut self, t: u64) {
        if t > self.stamp {
            let in_flight = (self.count[0] + self.count[1]) as u64;
            if in_flight > 0 {
                let dt = t - self.stamp;
                self.stats.io_ticks += dt;
                self.stats.time_in_queue += in_flight * dt;
            }
            self.stamp = t;
        }
    }

    /// Re-plans the uncommitted pieces plus `new` from `now` on (the elevator's dispatch loop).
    fn reschedule(&mut self, now: u64, new: Vec<Piece>) {
        if self.cfg.service == Service::Shared {
            return self.reschedule_shared(new);
        }
        let mut q = std::mem::take(&mut self.scratch);
        // Within a class the projection is in arrival order, and `new` arrived last.
        for p in self
            .sched
            .drain(self.committed..)
            .map(|s| s.piece)
            .chain(new)
        {
            q[p.class.idx()].push_back(p);
        }
        let mut t = self.free_at.max(now);
        let mut st = self.disp;
        while let Some(class) = self.elv_next_class(&q, &st) {
            let p = q[class.idx()]
                .pop_front()
                .expect("picked a non-empty class");
            let sequential = st.head == Some(p.sector);
            let ready = t.max(p.submitted_at + self.cfg.request_latency);
            let end = ready + self.cfg.service_time(p.op, p.pages, sequential);
            self.sched.push_back(Slot {
                piece: p,
                start: t,
                end,
            });
            st.dispatched(&p);
            t = end;
        }
        self.scratch = q;
    }

    /// Retires the pieces a shared device finished by `now` and projects the rest.
    fn retire_shared(&mut self, now: u64) {
        let mut finished = Vec::new();
        self.shared.advance(now, |p, end| finished.push((p, end)));
        for (p, end) in finished {
            self.freed_request(Slot {
                piece: p.piece,
                start: p.start,
                end,
            });
        }
        self.project_shared();
    }

    /// Adds `new` to a shared device's requests in flight and projects them all.
    fn reschedule_shared(&mut self, new: Vec<Piece>) {
        for p in new {
            let sequential = self.disp.head == Some(p.sector);
            self.disp.dispatched(&p);
            self.shared.pending.push_back(p.seq);
            self.shared.pieces.insert(
                p.seq,
                SharedPiece {
                    piece: p,
                    work: self.cfg.service_time(p.op, p.pages, sequential),
                    ready: p.submitted_at + self.cfg.request_latency,
                    start: 0,
                },
            );
        }
        self.project_shared();
    }

    /// `sched` as the shared device's completions if nothing else arrives.
    fn project_shared(&mut self) {
        self.sched.clear();
        let mut ahead = self.shared.clone();
        let sched = &mut self.sched;
        ahead.advance(u64::MAX, |p, end| {
            sched.push_back(Slot {
                piece: p.piece,
                start: p.start,
                end,
            })
        });
    }

    /// Which class to serve next (elv_next_request; deadline_dispatch_requests in spirit).
    fn elv_next_class(&self, q: &[VecDeque<Piece>; 2], st: &DispatchState) -> Option<BlkRw> {
        let sync = q[BlkRw::Sync.idx()].front();
        let asy = q[BlkRw::Async.idx()].front();
        match (sync, asy) {
            (None, None) => None,
            (Some(_), None) => Some(BlkRw::Sync),
            (None, Some(_)) => Some(BlkRw::Async),
            (Some(s), Some(a)) => {
                if !self.cfg.sync_priority {
                    return Some(if s.seq < a.seq {
                        BlkRw::Sync
                    } else {
                        BlkRw::Async
                    });
                }
                Some(match st.last_class {
                    Some(BlkRw::Sync) if st.run_len >= self.cfg.sync_batch => BlkRw::Async,
                    Some(BlkRw::Async) if st.run_len < self.cfg.async_batch => BlkRw::Async,
                    _ => BlkRw::Sync,
                })
            }
        }
    }
}
