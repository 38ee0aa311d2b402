//! Buffered writeback throttling: block/blk-wbt.c (4.10+) with the queue-depth
//! arithmetic of block/blk-rq-qos.c.
//!
//! Buffered writes (writeback, reclaim's pageout) and swap writes hold one of a few
//! tokens from submission to completion (`rq_wait_inc_below` under `get_limit`); a
//! writer finding none sleeps (`rq_qos_wait`) until completions wake it
//! (`wbt_rqw_done`). The limits come from `max_depth`: min(16, the queue's depth)
//! scaled by `scale_step` (`rq_depth_calc_max_depth`); `wb_normal` is half of it and
//! `wb_background` a quarter (`calc_wb_limits`). A write marked REQ_BACKGROUND
//! (background and kupdate writeback) or issued within 100 ms of a read gets
//! `wb_background`; swap, sync and metadata writes (REQ_HIPRIO) and every write within a
//! second of a `balance_dirty_pages` sleep get `max_depth`; other writes `wb_normal`.
//! On a device with a write-back cache a sleeper is woken only once the writes in
//! flight have all completed. Every 100 ms window with I/O in flight, `wb_timer_fn`
//! scales the depth: down when the fastest read of the window took longer than the
//! target latency (`wbt_lat_usec`), up when reads were fast or there were writes only.
//!
//! Not modelled: discards, the sync-issue check of `latency_exceeded` (a single read
//! outstanding longer than a window), and tokens per split piece (a request split at
//! `max_sectors_kb` takes its pieces' tokens together when the first one is free).

use serde::{Deserialize, Serialize};

/// RWB_DEF_DEPTH: the depth before scaling [requests].
const RWB_DEF_DEPTH: u32 = 16;
/// RWB_WINDOW_NSEC: the monitoring window [ns].
const RWB_WINDOW_NSEC: u64 = 100_000_000;
/// RWB_MIN_WRITE_SAMPLES: writes a window needs before its reads count.
const RWB_MIN_WRITE_SAMPLES: u32 = 3;
/// RWB_UNKNOWN_BUMP: windows without samples before the step drifts back to 0.
const RWB_UNKNOWN_BUMP: u32 = 5;
/// HZ / 10 of close_io() [ns].
const CLOSE_IO_NS: u64 = 100_000_000;
/// HZ of wb_recent_wait() [ns].
const RECENT_WAIT_NS: u64 = 1_000_000_000;

/// How blk-wbt sees a request (bio_to_wbt_flags and the REQ_* flags get_limit reads).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum WbtKind {
    /// Not throttled: reads (which time close_io) and O_DIRECT writes.
    #[default]
    Untracked,
    /// A buffered write of writeback on demand or of reclaim's pageout.
    Write,
    /// REQ_BACKGROUND: background or kupdate writeback.
    Background,
    /// REQ_SYNC / REQ_META / REQ_PRIO: integrity writeback, metadata.
    Hiprio,
    /// REQ_SWAP: a swap write (its own wait queue, the max depth).
    Swap,
}

impl WbtKind {
    /// The rq_wait it counts in (WBT_RWQ_BG or WBT_RWQ_SWAP), if tracked.
    pub fn rqw(self) -> Option<usize> {
        match self {
            WbtKind::Untracked => None,
            WbtKind::Swap => Some(1),
            _ => Some(0),
        }
    }
}

/// Outcome of a window (latency_exceeded's LAT_*).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lat {
    Ok,
    Unknown,
    UnknownWrites,
    Exceeded,
}

/// One queue's writeback throttle (struct rq_wb with its struct rq_depth).
#[derive(Debug, Clone)]
pub struct RqWb {
    min_lat_nsec: u64,
    write_cache: bool,
    queue_depth: u32,
    scale_step: i32,
    scaled_max: bool,
    max_depth: u32,
    wb_normal: u32,
    wb_background: u32,
    /// Tokens held per rq_wait (background writes, swap).
    inflight: [u32; 2],
    /// A writer sleeps on the rq_wait and was not woken since (wq_has_sleeper).
    sleeping: [bool; 2],
    last_issue: Option<u64>,
    last_comp: Option<u64>,
    last_bdp_sleep: Option<u64>,
    /// End of the armed window (the blk_stat timer), if armed.
    win_end: Option<u64>,
    cur_win_nsec: u64,
    unknown_cnt: u32,
    read_samples: u32,
    read_min: u64,
    write_samples: u32,
}

impl RqWb {
    /// A throttle with target read latency `lat_usec` on a queue `queue_depth` deep (wbt_init).
    pub fn new(lat_usec: u64, queue_depth: u32, write_cache: bool) -> Self {
        let mut rwb = RqWb {
            min_lat_nsec: lat_usec * 1000,
            write_cache,
            queue_depth: queue_depth.max(1),
            scale_step: 0,
            scaled_max: false,
            max_depth: 0,
            wb_normal: 0,
            wb_background: 0,
            inflight: [0; 2],
            sleeping: [false; 2],
            last_issue: None,
            last_comp: None,
            last_bdp_sleep: None,
            win_end: None,
            cur_win_nsec: RWB_WINDOW_NSEC,
            unknown_cnt: 0,
            read_samples: 0,
            read_min: u64::MAX,
            write_samples: 0,
        };
        rwb.calc_max_depth();
        rwb.calc_wb_limits();
        rwb
    }

    /// (max_depth, wb_normal, wb_background) now [requests].
    pub fn limits(&self) -> (u32, u32, u32) {
        (self.max_depth, self.wb_normal, self.wb_background)
    }

    /// The scaling step (rq_depth.scale_step).
    pub fn scale_step(&self) -> i32 {
        self.scale_step
    }

    /// Tokens held by tracked writes, per rq_wait.
    pub fn inflight(&self) -> [u32; 2] {
        self.inflight
    }

    /// Records a balance_dirty_pages sleep (bdi->last_bdp_sleep).
    pub fn note_bdp_sleep(&mut self, now: u64) {
        self.last_bdp_sleep = Some(now);
    }

    /// A writer slept in balance_dirty_pages within the last second (wb_recent_wait).
    fn recent_wait(&self, now: u64) -> bool {
        self.last_bdp_sleep
            .is_some_and(|t| now < t + RECENT_WAIT_NS)
    }

    /// A read was issued or completed within 100 ms (close_io).
    fn close_io(&self, now: u64) -> bool {
        let near = |t: Option<u64>| t.is_some_and(|t| now < t + CLOSE_IO_NS);
        near(self.last_issue) || near(self.last_comp)
    }

    /// The token limit for a write of `kind` (get_limit).
    fn get_limit(&self, kind: WbtKind, now: u64) -> u32 {
        if matches!(kind, WbtKind::Hiprio | WbtKind::Swap) || self.recent_wait(now) {
            self.max_depth
        } else if kind == WbtKind::Background || self.close_io(now) {
            self.wb_background
        } else {
            self.wb_normal
        }
    }

    /// Whether a write of `kind` may be issued at `now`, taking a token for each of its
    /// `pieces` if so (wbt_wait → rq_qos_wait); a refused writer sleeps behind any writer
    /// already sleeping.
    pub fn throttle(&mut self, now: u64, kind: WbtKind, pieces: u32) -> bool {
        self.tick(now);
        let Some(i) = kind.rqw() else {
            self.last_issue = Some(now);
            return true;
        };
        if self.sleeping[i] || self.inflight[i] >= self.get_limit(kind, now) {
            self.sleeping[i] = true;
            return false;
        }
        self.inflight[i] += pieces;
        if self.win_end.is_none() {
            self.arm_timer(now);
        }
        true
    }

    /// A request completed at `now` after `latency` ns (wbt_done and the blk_stat sample).
    pub fn done(&mut self, now: u64, kind: WbtKind, is_read: bool, latency: u64) {
        self.tick(now);
        if self.win_end.is_some() {
            if is_read {
                self.read_samples += 1;
                self.read_min = self.read_min.min(latency);
            } else {
                self.write_samples += 1;
            }
        }
        let Some(i) = kind.rqw() else {
            if is_read {
                self.last_comp = Some(now);
            }
            return;
        };
        self.inflight[i] = self.inflight[i].saturating_sub(1);
        self.rqw_done(i, now);
    }

    /// Wakes the sleepers of rq_wait `i` when few enough writes are left (wbt_rqw_done).
    fn rqw_done(&mut self, i: usize, now: u64) {
        let inflight = self.inflight[i];
        let limit = if self.write_cache && !self.recent_wait(now) {
            0
        } else {
            self.wb_normal
        };
        if inflight > 0 && inflight >= limit {
            return;
        }
        if self.sleeping[i] {
            let diff = limit.saturating_sub(inflight);
            if inflight == 0 || diff >= self.wb_background / 2 {
                self.sleeping[i] = false;
            }
        }
    }

    /// When a sleeper of `kind`'s rq_wait would be woken if the tracked completions ahead
    /// come at `ends` (each with its rq_wait), in order; None if none would wake it.
    pub fn wake_at(
        &self,
        kind: WbtKind,
        now: u64,
        ends: impl Iterator<Item = (u64, usize)>,
    ) -> Option<u64> {
        let i = kind.rqw()?;
        let mut inflight = self.inflight[i];
        for (t, j) in ends {
            if j != i {
                continue;
            }
            inflight = inflight.saturating_sub(1);
            let limit = if self.write_cache && !self.recent_wait(t.max(now)) {
                0
            } else {
                self.wb_normal
            };
            if inflight == 0 || (inflight < limit && limit - inflight >= self.wb_background / 2) {
                return Some(t);
            }
        }
        self.win_end
    }

    /// Runs the window timer for every window ended by `now` (wb_timer_fn).
    pub fn tick(&mut self, now: u64) {
        while let Some(end) = self.win_end.filter(|&e| e <= now) {
            self.timer_fn(end);
        }
    }

    /// The window ending at `t` (wb_timer_fn): scale the depth and re-arm while I/O is in flight.
    fn timer_fn(&mut self, t: u64) {
        match self.latency_exceeded(t) {
            Lat::Exceeded => self.scale_down(true),
            Lat::Ok | Lat::UnknownWrites => self.scale_up(),
            Lat::Unknown => {
                self.unknown_cnt += 1;
                if self.unknown_cnt >= RWB_UNKNOWN_BUMP {
                    if self.scale_step > 0 {
                        self.scale_up();
                    } else if self.scale_step < 0 {
                        self.scale_down(false);
                    }
                }
            }
        }
        self.read_samples = 0;
        self.read_min = u64::MAX;
        self.write_samples = 0;
        if self.scale_step != 0 || self.inflight.iter().any(|&n| n > 0) {
            self.arm_timer(t);
        } else {
            self.win_end = None;
        }
    }

    /// The window's verdict (latency_exceeded, without the sync-issue check).
    fn latency_exceeded(&self, t: u64) -> Lat {
        if self.read_samples < 1 || self.write_samples < RWB_MIN_WRITE_SAMPLES {
            if self.write_samples > 0 || self.recent_wait(t) || self.inflight.iter().any(|&n| n > 0)
            {
                return Lat::UnknownWrites;
            }
            return Lat::Unknown;
        }
        if self.read_min > self.min_lat_nsec {
            return Lat::Exceeded;
        }
        Lat::Ok
    }

    /// Starts the next window at `t` (rwb_arm_timer): shorter while scaled down.
    fn arm_timer(&mut self, t: u64) {
        self.cur_win_nsec = if self.scale_step > 0 {
            (RWB_WINDOW_NSEC << 4) / int_sqrt(((self.scale_step + 1) as u64) << 8)
        } else {
            RWB_WINDOW_NSEC
        };
        self.win_end = Some(t + self.cur_win_nsec);
    }

    /// One step deeper (scale_up → rq_depth_scale_up); wakes every sleeper.
    fn scale_up(&mut self) {
        if self.scaled_max {
            return;
        }
        self.scale_step -= 1;
        self.scaled_max = self.calc_max_depth();
        self.calc_wb_limits();
        self.unknown_cnt = 0;
        self.sleeping = [false; 2];
    }

    /// One step shallower (scale_down → rq_depth_scale_down).
    fn scale_down(&mut self, hard_throttle: bool) {
        if self.max_depth == 1 {
            return;
        }
        if self.scale_step < 0 && hard_throttle {
            self.scale_step = 0;
        } else {
            self.scale_step += 1;
        }
        self.scaled_max = false;
        self.calc_max_depth();
        self.calc_wb_limits();
        self.unknown_cnt = 0;
    }

    /// max_depth from the step (rq_depth_calc_max_depth); true when capped at 3/4 of the queue.
    fn calc_max_depth(&mut self) -> bool {
        let mut capped = false;
        if self.queue_depth == 1 {
            if self.scale_step > 0 {
                self.max_depth = 1;
            } else {
                self.max_depth = 2;
                capped = true;
            }
            return capped;
        }
        let mut depth = RWB_DEF_DEPTH.min(self.queue_depth);
        if self.scale_step > 0 {
            depth = 1 + ((depth - 1) >> (self.scale_step as u32).min(31));
        } else if self.scale_step < 0 {
            let maxd = 3 * self.queue_depth / 4;
            depth = 1 + ((depth - 1) << (-self.scale_step as u32).min(31));
            if depth > maxd {
                depth = maxd;
                capped = true;
            }
        }
        self.max_depth = depth;
        capped
    }

    /// wb_normal and wb_background from max_depth (calc_wb_limits).
    fn calc_wb_limits(&mut self) {
        if self.min_lat_nsec == 0 {
            self.wb_normal = 0;
            self.wb_background = 0;
        } else if self.max_depth <= 2 {
            self.wb_normal = self.max_depth;
            self.wb_background = 1;
        } else {
            self.wb_normal = self.max_depth.div_ceil(2);
            self.wb_background = self.max_depth.div_ceil(4);
        }
    }
}

/// The integer square root (int_sqrt in lib/math/int_sqrt.c).
fn int_sqrt(x: u64) -> u64 {
    x.isqrt()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_a_half_and_a_quarter_of_sixteen() {
        // A 128-deep queue (this project's virtio disk): 16, 8 and 4.
        assert_eq!(RqWb::new(75_000, 128, true).limits(), (16, 8, 4));
        // A queue 2 deep: max 2, normal 2 (max_depth <= 2), background 1.
        assert_eq!(RqWb::new(75_000, 2, true).limits(), (2, 2, 1));
    }

    #[test]
    fn background_writes_stop_at_four_and_wake_when_all_completed_on_a_write_cache() {
        let mut w = RqWb::new(75_000, 128, true);
        for _ in 0..4 {
            assert!(w.throttle(0, WbtKind::Background, 1));
        }
        assert!(!w.throttle(0, WbtKind::Background, 1), "the fifth waits");
        // A normal write now queues behind the sleeper.
        assert!(!w.throttle(0, WbtKind::Write, 1));
        for k in 0..3 {
            w.done(1_000 + k, WbtKind::Background, false, 1_000);
            assert!(
                !w.throttle(1_000 + k, WbtKind::Write, 1),
                "woken only at 0 in flight"
            );
        }
        w.done(2_000, WbtKind::Background, false, 1_000);
        assert!(w.throttle(2_000, WbtKind::Background, 1));
    }

    #[test]
    fn a_read_nearby_limits_plain_writes_to_the_background_depth() {
        let mut w = RqWb::new(75_000, 128, false);
        assert!(w.throttle(0, WbtKind::Untracked, 1)); // a read issued
        for _ in 0..4 {
            assert!(w.throttle(10, WbtKind::Write, 1));
        }
        assert!(!w.throttle(10, WbtKind::Write, 1));
        // 100 ms later the normal depth (8) applies; the sleeper is woken by a completion
        // leaving 3 in flight (diff 5 >= 4 / 2).
        w.done(100_000_020, WbtKind::Write, false, 1_000);
        assert!(w.throttle(100_000_030, WbtKind::Write, 1));
        // Swap writes have their own queue and the max depth (scaled up once by now:
        // the window that ended at 100 ms saw writes in flight and no read completed).
        assert_eq!(w.limits(), (31, 16, 8));
        for _ in 0..31 {
            assert!(w.throttle(100_000_040, WbtKind::Swap, 1));
        }
        assert!(!w.throttle(100_000_040, WbtKind::Swap, 1));
    }

    #[test]
    fn windows_of_writes_alone_scale_the_depth_up_to_three_quarters_of_the_queue() {
        let mut w = RqWb::new(75_000, 128, true);
        assert!(w.throttle(0, WbtKind::Write, 1));
        // Writes complete, one stays in flight: each window scales up (LAT_UNKNOWN_WRITES).
        assert!(w.throttle(1, WbtKind::Write, 1));
        w.done(2, WbtKind::Write, false, 2);
        w.tick(RWB_WINDOW_NSEC);
        assert_eq!(w.limits(), (31, 16, 8));
        w.tick(2 * RWB_WINDOW_NSEC);
        assert_eq!(w.limits().0, 61);
        w.tick(3 * RWB_WINDOW_NSEC);
        assert_eq!(w.limits().0, 96);
        w.tick(4 * RWB_WINDOW_NSEC);
        assert_eq!(w.scale_step(), -3, "capped: no further step");
    }

    #[test]
    fn slow_reads_scale_the_depth_down_and_shorten_the_window() {
        let mut w = RqWb::new(2_000, 128, false);
        assert!(w.throttle(0, WbtKind::Write, 1));
        for k in 0..3 {
            w.done(10 + k, WbtKind::Untracked, false, 1_000);
        }
        w.done(20, WbtKind::Untracked, true, 5_000_000); // a read of 5 ms > 2 ms
        w.tick(RWB_WINDOW_NSEC);
        assert_eq!(w.scale_step(), 1);
        assert_eq!(w.limits(), (8, 4, 2));
        assert_eq!(
            w.win_end,
            Some(RWB_WINDOW_NSEC + (RWB_WINDOW_NSEC << 4) / 22)
        );
    }

    #[test]
    fn wake_at_finds_the_completion_that_empties_the_queue() {
        let mut w = RqWb::new(75_000, 128, true);
        for _ in 0..4 {
            assert!(w.throttle(0, WbtKind::Background, 1));
        }
        let ends = [(5, 0), (6, 1), (7, 0), (8, 0), (9, 0)];
        assert_eq!(w.wake_at(WbtKind::Background, 0, ends.into_iter()), Some(9));
        assert_eq!(w.wake_at(WbtKind::Untracked, 0, ends.into_iter()), None);
    }
}
