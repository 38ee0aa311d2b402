//! Replay of a recorded kmem trace against the page allocator.
//!
//! The input is ftrace text of `kmem:mm_page_alloc`, `mm_page_free`,
//! `mm_page_free_batched` and `mm_page_alloc_extfrag`, as a 6.18 kernel prints
//! them in /sys/kernel/tracing/trace (`comm-pid [cpu] flags ts: event: fields`)
//! or as `perf script` prints them (`comm pid [cpu] ts: kmem:event: fields`).
//! Each recorded allocation asks the simulated kernel's allocator
//! (__alloc_pages: fast path, watermarks, fallback, slow path) for the same
//! order with the same GFP flags (hence the same migratetype); the recorded pfn
//! names the allocation, and its free (by pfn) frees the simulated block it was
//! mapped to. The recording's own extfrag events are counted beside the ones
//! the simulated allocator fires.
//!
//! Simplifications: the simulated machine starts empty (pages allocated before
//! the recording began are absent, and their frees are counted and skipped);
//! the replayed pages are held by one task, not mapped or cached, so reclaim
//! finds nothing to reclaim and compaction cannot move them; kswapd and
//! kcompactd do not run between allocations (there is no task engine here).

use crate::config::Scenario;
use crate::engine::TaskId;
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::Gfp;
use crate::mm::mmzone::NR_PAGE_ORDERS;
use crate::mm::page::{IntMap, PageKind, Pfn, PAGE_SIZE};
use serde::Serialize;
use std::io::BufRead;

/// Malformed lines kept as examples.
pub const MAX_BAD_LINES_SHOWN: usize = 5;

/// One kmem event of a recording.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KmemEvent {
    /// mm_page_alloc; `pfn` None when the allocation failed (pfn=0x0, page=(nil)).
    Alloc {
        /// Recorded pfn.
        pfn: Option<u64>,
        /// Order.
        order: u32,
        /// GFP flags (vmsim's bits).
        gfp: u32,
        /// Migratetype printed.
        migratetype: i32,
    },
    /// mm_page_free or mm_page_free_batched.
    Free {
        /// Recorded pfn.
        pfn: u64,
        /// Order (0 for a batched free).
        order: u32,
    },
    /// mm_page_alloc_extfrag.
    Extfrag {
        /// fragmenting=1.
        fragmenting: bool,
    },
}

/// What one line of the text is.
#[derive(Debug, Clone, PartialEq)]
pub enum Line {
    /// A kmem page event at a time [ns].
    Event(u64, KmemEvent),
    /// A comment, a blank line or another event: ignored.
    Other,
    /// A line that should be an event and is not (the reason).
    Malformed(String),
}

/// Value of `key=` in the fields.
fn field<'a>(fields: &'a str, key: &str) -> Option<&'a str> {
    fields.split_ascii_whitespace().find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == key).then_some(v)
    })
}

/// A number printed as `0x%lx` or `%d`.
fn number(v: &str) -> Option<u64> {
    match v.strip_prefix("0x") {
        Some(h) => u64::from_str_radix(h, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Parses a field that must be there.
fn need<'a>(fields: &'a str, key: &str) -> Result<&'a str, String> {
    field(fields, key).ok_or_else(|| format!("no {key}= field"))
}

/// Parses one line of ftrace text or `perf script` output.
pub fn parse_line(line: &str) -> Line {
    let t = line.trim_start();
    if t.is_empty() || t.starts_with('#') {
        return Line::Other;
    }
    // The event name is the first token ending in ':' after the timestamp token.
    let Some(at) = t.find(" mm_page_").or_else(|| t.find(" kmem:mm_page_")) else {
        return if t.contains(": ") {
            Line::Other
        } else {
            Line::Malformed("not an ftrace event line".into())
        };
    };
    let before = t[..at].trim_end();
    let rest = t[at + 1..].trim_start();
    let rest = rest.strip_prefix("kmem:").unwrap_or(rest);
    let Some((name, fields)) = rest.split_once(':') else {
        return Line::Malformed("no ':' after the event name".into());
    };
    let Some(ts) = before
        .rsplit(|c: char| c.is_ascii_whitespace())
        .next()
        .and_then(|s| s.strip_suffix(':'))
        .and_then(parse_timestamp)
    else {
        return Line::Malformed("no timestamp before the event".into());
    };
    match parse_event(name, fields) {
        Ok(Some(ev)) => Line::Event(ts, ev),
        Ok(None) => Line::Other,
        Err(e) => Line::Malformed(format!("{name}: {e}")),
    }
}

/// Seconds as ftrace prints them (`199.535019`) → ns.
fn parse_timestamp(s: &str) -> Option<u64> {
    let (sec, frac) = s.split_once('.').unwrap_or((s, ""));
    let sec: u64 = sec.parse().ok()?;
    if frac.len() > 9 || !frac.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let frac_ns: u64 = if frac.is_empty() {
        0
    } else {
        frac.parse::<u64>().ok()? * 10u64.pow(9 - frac.len() as u32)
    };
    sec.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// The fields of a kmem page event; None for another mm_page_* event.
fn parse_event(name: &str, fields: &str) -> Result<Option<KmemEvent>, String> {
    let num = |key: &str| -> Result<u64, String> {
        let v = need(fields, key)?;
        number(v).ok_or_else(|| format!("{key}={v} is not a number"))
    };
    let order = |key: &str| -> Result<u32, String> {
        let o = num(key)?;
        if o as usize >= NR_PAGE_ORDERS {
            return Err(format!(
                "{key}={o} is above the largest order {}",
                NR_PAGE_ORDERS - 1
            ));
        }
        Ok(o as u32)
    };
    Ok(Some(match name {
        "mm_page_alloc" => {
            let pfn = num("pfn")?;
            let page = need(fields, "page")?;
            let failed = pfn == 0 && (page == "(nil)" || page.bytes().all(|b| b == b'0'));
            let gfp = crate::trace::parse_gfp_flags(need(fields, "gfp_flags")?)?;
            KmemEvent::Alloc {
                pfn: (!failed).then_some(pfn),
                order: order("order")?,
                gfp,
                migratetype: num("migratetype")? as i32,
            }
        }
        "mm_page_free" => KmemEvent::Free {
            pfn: num("pfn")?,
            order: order("order")?,
        },
        "mm_page_free_batched" => KmemEvent::Free {
            pfn: num("pfn")?,
            order: 0,
        },
        "mm_page_alloc_extfrag" => KmemEvent::Extfrag {
            fragmenting: num("fragmenting")? != 0,
        },
        _ => return Ok(None),
    }))
}

/// What a trace holds, from a first pass: its largest pfn and its events.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Survey {
    /// Largest pfn an allocation or free names.
    pub max_pfn: Option<u64>,
    /// Events of the four kinds.
    pub events: u64,
    /// Time of the first and last event [ns].
    pub span_ns: (u64, u64),
}

/// Reads a trace once for its largest pfn (so that a trace of a larger machine is
/// refused before anything is replayed).
pub fn survey(r: &mut dyn BufRead) -> Result<Survey, String> {
    let mut s = Survey::default();
    let mut first = None;
    for_each_line(r, |_, line| {
        if let Line::Event(ts, ev) = line {
            let pfn = match ev {
                KmemEvent::Alloc {
                    pfn: Some(p),
                    order,
                    ..
                }
                | KmemEvent::Free { pfn: p, order } => Some(p + (1u64 << order) - 1),
                _ => None,
            };
            if let Some(p) = pfn {
                s.max_pfn = Some(s.max_pfn.map_or(p, |m| m.max(p)));
            }
            s.events += 1;
            first.get_or_insert(ts);
            s.span_ns = (*first.as_ref().unwrap(), ts);
        }
    })
    .map_err(|e| format!("the trace could not be read to its end: {e}"))?;
    Ok(s)
}

/// Calls `f(line_number, parsed line)` for every line, reading in constant memory
/// (a line longer than 64 KiB is malformed).
fn for_each_line(r: &mut dyn BufRead, mut f: impl FnMut(u64, Line)) -> std::io::Result<()> {
    let mut buf = Vec::with_capacity(512);
    let mut n = 0u64;
    loop {
        buf.clear();
        let mut lim = std::io::Read::take(&mut *r, 64 << 10);
        let got = lim.read_until(b'\n', &mut buf)? as u64;
        if got == 0 {
            return Ok(());
        }
        n += 1;
        if buf.last() != Some(&b'\n') && got == 64 << 10 {
            // The rest of an over-long line, read and dropped in pieces.
            while !buf.ends_with(b"\n") {
                buf.clear();
                if std::io::Read::take(&mut *r, 64 << 10).read_until(b'\n', &mut buf)? == 0 {
                    break;
                }
            }
            f(n, Line::Malformed("longer than 64 KiB".into()));
            continue;
        }
        match std::str::from_utf8(&buf) {
            Ok(s) => f(n, parse_line(s.trim_end_matches(['\n', '\r']))),
            Err(_) => f(n, Line::Malformed("not UTF-8 text".into())),
        }
    }
}

/// One sample of the allocator's state.
#[derive(Debug, Clone, Serialize)]
pub struct Sample {
    /// Trace time since the first event [s].
    pub time_seconds: f64,
    /// Free blocks of each order, all zones (buddyinfo summed).
    pub free_blocks: Vec<u64>,
    /// Free pages (NR_FREE_PAGES, all zones).
    pub free_pages: u64,
    /// Largest order with a free block (-1: none).
    pub largest_free_order: i32,
    /// Pageblocks of each migratetype, all zones (pagetypeinfo's block counts).
    pub pageblocks: Vec<u64>,
    /// Pageblocks holding more than one mobility.
    pub mixed_pageblocks: u64,
    /// vmsim's extfrag events so far (since the boot).
    pub extfrag: u64,
    /// The recording's extfrag events so far.
    pub recorded_extfrag: u64,
    /// Pages the replay holds.
    pub held_pages: u64,
}

/// The result of a kmem replay.
#[derive(Debug, Clone, Default, Serialize)]
pub struct KmemReport {
    /// Lines read.
    pub lines: u64,
    /// Allocations replayed (recorded allocations that succeeded).
    pub allocs: u64,
    /// Allocations by order.
    pub allocs_by_order: Vec<u64>,
    /// Recorded allocations that failed on the recording machine (pfn=0x0).
    pub recorded_failed_allocs: u64,
    /// Allocations the simulated kernel could not satisfy.
    pub failed_allocs: u64,
    /// Frees replayed.
    pub frees: u64,
    /// Frees of pages allocated before the recording began (skipped).
    pub unknown_frees: u64,
    /// Allocations of a pfn the replay still held (its free was not recorded): the
    /// old block is freed first.
    pub realloc_live: u64,
    /// Recorded allocations whose printed migratetype differs from the one vmsim
    /// derives from their GFP flags.
    pub migratetype_mismatch: u64,
    /// Extfrag events of vmsim's allocator during the replay (the boot's not counted).
    pub extfrag: u64,
    /// Of them, fragmenting (fallback below pageblock order).
    pub extfrag_fragmenting: u64,
    /// Extfrag events in the recording.
    pub recorded_extfrag: u64,
    /// Of them, fragmenting=1.
    pub recorded_extfrag_fragmenting: u64,
    /// Lines that did not parse.
    pub malformed: u64,
    /// The first few: line number and reason.
    pub malformed_examples: Vec<(u64, String)>,
    /// The allocator's state over time.
    pub samples: Vec<Sample>,
    /// /proc/buddyinfo at the end.
    pub buddyinfo: String,
    /// /proc/pagetypeinfo at the end.
    pub pagetypeinfo: String,
}

/// A kernel replaying a kmem trace.
pub struct KmemReplay {
    /// The kernel.
    k: Kernel,
    /// The task the allocations are made in.
    tid: TaskId,
    /// Recorded pfn → simulated block (head, order).
    live: IntMap<u64, (Pfn, u8)>,
    /// Pages held.
    held: u64,
    /// The figures.
    r: KmemReport,
    /// Time of the first event [ns].
    t0: Option<u64>,
    /// Next sample time [ns].
    next_sample: u64,
    /// Sampling interval [ns].
    interval: u64,
    /// Extfrag events and fragmenting ones of the boot, before the replay.
    extfrag0: (u64, u64),
}

/// The memory a machine needs for pfns up to `max_pfn` [bytes], rounded up to 1 GiB.
pub fn memory_needed(max_pfn: u64) -> u64 {
    ((max_pfn + 1) * PAGE_SIZE).div_ceil(1 << 30) << 30
}

impl KmemReplay {
    /// Boots the scenario's machine and kernel (its workloads are not run); `interval`
    /// is the sampling period in trace time [ns].
    pub fn new(sc: &Scenario, interval: u64) -> Result<Self, String> {
        let mut k = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        k.mm.memcg.create_from_specs(&sc.cgroups);
        let tid = k.alloc_task_struct("replay", 0, false);
        if !k.copy_process(tid, 0) {
            return Err("the replay task could not be created".into());
        }
        let k_extfrag = (k.mm.frag.extfrag_events, k.mm.frag.extfrag_fragmenting);
        Ok(KmemReplay {
            k,
            tid,
            live: IntMap::default(),
            held: 0,
            r: KmemReport {
                allocs_by_order: vec![0; NR_PAGE_ORDERS],
                ..Default::default()
            },
            t0: None,
            next_sample: 0,
            interval: interval.max(1),
            extfrag0: (k_extfrag.0, k_extfrag.1),
        })
    }

    /// Frames of the simulated machine.
    pub fn nr_frames(&self) -> u64 {
        self.k.mm.map.len() as u64
    }

    /// Replays one line.
    pub fn line(&mut self, n: u64, line: Line) {
        self.r.lines = n;
        match line {
            Line::Other => {}
            Line::Malformed(why) => {
                self.r.malformed += 1;
                if self.r.malformed_examples.len() < MAX_BAD_LINES_SHOWN {
                    self.r.malformed_examples.push((n, why));
                }
            }
            Line::Event(ts, ev) => {
                let t0 = *self.t0.get_or_insert(ts);
                let t = ts.saturating_sub(t0);
                while t >= self.next_sample {
                    self.sample(self.next_sample);
                    self.next_sample += self.interval;
                }
                self.k.mm.cur.now = t;
                self.k.mm.cur.acc = 0;
                self.k.mm.cur.slept = 0;
                self.event(ev);
            }
        }
    }

    /// One kmem event.
    fn event(&mut self, ev: KmemEvent) {
        match ev {
            KmemEvent::Alloc { pfn: None, .. } => self.r.recorded_failed_allocs += 1,
            KmemEvent::Alloc {
                pfn: Some(pfn),
                order,
                gfp,
                migratetype,
            } => self.alloc(pfn, order as usize, Gfp(gfp), migratetype),
            KmemEvent::Free { pfn, .. } => {
                if self.free(pfn) {
                    self.r.frees += 1;
                } else {
                    self.r.unknown_frees += 1;
                }
            }
            KmemEvent::Extfrag { fragmenting } => {
                self.r.recorded_extfrag += 1;
                self.r.recorded_extfrag_fragmenting += fragmenting as u64;
            }
        }
    }

    /// A recorded allocation: the same request of the simulated allocator
    /// (__alloc_pages); a throttled attempt (which would sleep) is retried at once.
    fn alloc(&mut self, pfn: u64, order: usize, gfp: Gfp, migratetype: i32) {
        if self.free(pfn) {
            self.r.realloc_live += 1;
        }
        if crate::mm::gfp::gfp_migratetype(gfp, true) as i32 != migratetype {
            self.r.migratetype_mismatch += 1;
        }
        for _ in 0..16 {
            match self.k.alloc_pages(gfp, order, self.tid) {
                AllocResult::Page(p) => {
                    let page = &mut self.k.mm.map[p as usize];
                    page.set_kind(PageKind::Held);
                    page.owner = self.tid;
                    self.live.insert(pfn, (p, order as u8));
                    self.held += 1 << order;
                    self.r.allocs += 1;
                    self.r.allocs_by_order[order] += 1;
                    return;
                }
                AllocResult::Retry => self.k.mm.cur.sleep = 0,
                AllocResult::Failed | AllocResult::Killed => break,
            }
        }
        self.r.failed_allocs += 1;
    }

    /// Frees the simulated block a recorded pfn was mapped to; false if none.
    fn free(&mut self, pfn: u64) -> bool {
        let Some((p, order)) = self.live.remove(&pfn) else {
            return false;
        };
        let page = &mut self.k.mm.map[p as usize];
        page.set_kind(PageKind::Other);
        page.owner = 0;
        self.held -= 1 << order;
        self.k.mm.free_pages(p, order as usize, 0);
        true
    }

    /// Records the allocator's state at trace time `t` [ns].
    fn sample(&mut self, t: u64) {
        let mm = &self.k.mm;
        let mut free_blocks = vec![0u64; NR_PAGE_ORDERS];
        let mut pageblocks = vec![0u64; crate::mm::mmzone::MIGRATE_TYPES];
        let mut free_pages = 0;
        for z in mm.zones.iter().filter(|z| z.populated()) {
            for (o, a) in z.free_area.iter().enumerate() {
                free_blocks[o] += a.nr_free;
            }
            for (mt, c) in mm.pageblock_counts(z.id).iter().enumerate() {
                pageblocks[mt] += c;
            }
            free_pages += z.free_pages().max(0) as u64;
        }
        let largest = free_blocks
            .iter()
            .rposition(|&n| n > 0)
            .map_or(-1, |o| o as i32);
        self.r.samples.push(Sample {
            time_seconds: t as f64 / 1e9,
            free_blocks,
            free_pages,
            largest_free_order: largest,
            pageblocks,
            mixed_pageblocks: mm.mixed_pageblocks(),
            extfrag: mm.frag.extfrag_events - self.extfrag0.0,
            recorded_extfrag: self.r.recorded_extfrag,
            held_pages: self.held,
        });
    }

    /// The report, with a last sample at the end of the trace.
    pub fn finish(mut self) -> KmemReport {
        let t = self.k.mm.cur.now;
        if self.r.samples.last().map(|s| s.time_seconds) != Some(t as f64 / 1e9) {
            self.sample(t);
        }
        self.r.extfrag = self.k.mm.frag.extfrag_events - self.extfrag0.0;
        self.r.extfrag_fragmenting = self.k.mm.frag.extfrag_fragmenting - self.extfrag0.1;
        self.r.buddyinfo = self.k.mm.buddyinfo();
        self.r.pagetypeinfo = self.k.mm.pagetypeinfo();
        self.r
    }
}

/// Why a replay could not run.
#[derive(Debug, Clone, PartialEq)]
pub enum KmemError {
    /// The trace names pfns beyond the simulated machine (the memory it needs [bytes]).
    TooSmall {
        /// Largest pfn named.
        max_pfn: u64,
        /// Frames of the simulated machine.
        frames: u64,
        /// Memory needed [bytes].
        needed: u64,
    },
    /// Another problem, one line.
    Other(String),
}

/// Replays a kmem trace: `open` opens it (twice: a first pass finds its largest pfn).
pub fn replay_kmem(
    open: &mut dyn FnMut() -> Result<Box<dyn BufRead>, String>,
    sc: &Scenario,
    interval_ns: u64,
) -> Result<KmemReport, KmemError> {
    let s = survey(&mut *open().map_err(KmemError::Other)?).map_err(KmemError::Other)?;
    let mut rp = KmemReplay::new(sc, interval_ns).map_err(KmemError::Other)?;
    if let Some(max_pfn) = s.max_pfn {
        if max_pfn >= rp.nr_frames() {
            return Err(KmemError::TooSmall {
                max_pfn,
                frames: rp.nr_frames(),
                needed: memory_needed(max_pfn),
            });
        }
    }
    let mut r = open().map_err(KmemError::Other)?;
    for_each_line(&mut *r, |n, line| rp.line(n, line))
        .map_err(|e| KmemError::Other(format!("the trace could not be read to its end: {e}")))?;
    Ok(rp.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALLOC: &str = "              dd-4454    [000] .....   201.034226: mm_page_alloc: page=00000000125db4e0 pfn=0x143631 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP";

    #[test]
    fn kernel_and_perf_script_lines_parse_alike() {
        let want = Line::Event(
            201_034_226_000,
            KmemEvent::Alloc {
                pfn: Some(0x143631),
                order: 0,
                gfp: crate::mm::gfp::GFP_HIGHUSER_MOVABLE.0 | crate::mm::gfp::__GFP_COMP.0,
                migratetype: 1,
            },
        );
        assert_eq!(parse_line(ALLOC), want);
        let perf = "              dd    4454 [000]   201.034226: kmem:mm_page_alloc: page=0xffffea00050d8c40 pfn=0x143631 order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE|__GFP_COMP";
        assert_eq!(parse_line(perf), want);
        let free = " kworker/u8:1-77 [001] d..1. 5.000001: mm_page_free_batched: page=000000003c0978b0 pfn=0x10 order=0";
        assert_eq!(
            parse_line(free),
            Line::Event(
                5_000_001_000,
                KmemEvent::Free {
                    pfn: 0x10,
                    order: 0
                }
            )
        );
        let ext = "              dd-4454    [000] d..3.   199.535019: mm_page_alloc_extfrag: page=000000002bd65b56 pfn=0x14f800 alloc_order=0 fallback_order=10 pageblock_order=9 alloc_migratetype=2 fallback_migratetype=1 fragmenting=0 change_ownership=1";
        assert_eq!(
            parse_line(ext),
            Line::Event(199_535_019_000, KmemEvent::Extfrag { fragmenting: false })
        );
        let failed = " a-1 [000] ..... 1.5: mm_page_alloc: page=0000000000000000 pfn=0x0 order=9 migratetype=1 gfp_flags=GFP_TRANSHUGE";
        assert!(matches!(
            parse_line(failed),
            Line::Event(
                _,
                KmemEvent::Alloc {
                    pfn: None,
                    order: 9,
                    ..
                }
            )
        ));
    }

    #[test]
    fn other_lines_are_ignored_and_broken_ones_named() {
        assert_eq!(parse_line("# tracer: nop"), Line::Other);
        assert_eq!(parse_line(""), Line::Other);
        assert_eq!(
            parse_line(" dd-1 [000] ..... 1.0: mm_vmscan_kswapd_wake: nid=0 order=0"),
            Line::Other
        );
        assert_eq!(
            parse_line("garbage"),
            Line::Malformed("not an ftrace event line".into())
        );
        let bad_order = ALLOC.replace("order=0", "order=12");
        assert!(matches!(parse_line(&bad_order), Line::Malformed(m) if m.contains("order=12")));
        let bad_gfp = ALLOC.replace("__GFP_COMP", "__GFP_BOGUS");
        assert!(matches!(parse_line(&bad_gfp), Line::Malformed(m) if m.contains("__GFP_BOGUS")));
    }

    fn scenario(memory: &str) -> Scenario {
        Scenario::from_toml(&format!("[machine]\nmemory = \"{memory}\"\ncpus = 1\n")).unwrap()
    }

    fn run(text: &str, memory: &str) -> Result<KmemReport, KmemError> {
        let text = text.to_string();
        replay_kmem(
            &mut || Ok(Box::new(std::io::Cursor::new(text.clone().into_bytes()))),
            &scenario(memory),
            1_000_000_000,
        )
    }

    #[test]
    fn frees_by_pfn_free_the_simulated_block_the_pfn_was_mapped_to() {
        let mut t = String::new();
        for i in 0..64u64 {
            t += &format!(" a-1 [000] ..... 1.{i:06}: mm_page_alloc: page=1 pfn=0x{:x} order=2 migratetype=0 gfp_flags=GFP_KERNEL\n", 0x1000 + i * 4);
        }
        for i in 0..64u64 {
            t += &format!(
                " a-1 [000] ..... 2.{i:06}: mm_page_free: page=1 pfn=0x{:x} order=2\n",
                0x1000 + i * 4
            );
        }
        t += " a-1 [000] ..... 3.0: mm_page_free: page=1 pfn=0x99 order=0\n";
        let r = run(&t, "256MiB").unwrap();
        assert_eq!(
            (r.allocs, r.frees, r.unknown_frees, r.failed_allocs),
            (64, 64, 1, 0)
        );
        assert_eq!(r.allocs_by_order[2], 64);
        assert_eq!(r.samples.last().unwrap().held_pages, 0);
        // Samples every second of trace time from the first event, each taken before
        // the events of its time: none held, 64 blocks of 4 pages, all freed.
        let held: Vec<u64> = r.samples.iter().map(|s| s.held_pages).collect();
        assert_eq!(held, vec![0, 256, 0]);
    }

    #[test]
    fn a_trace_of_a_larger_machine_is_refused_naming_the_memory_it_needs() {
        let t = ALLOC.to_string() + "\n";
        match run(&t, "256MiB") {
            Err(KmemError::TooSmall {
                max_pfn, needed, ..
            }) => {
                assert_eq!(max_pfn, 0x143631);
                assert_eq!(needed, 6 << 30);
            }
            other => panic!("{other:?}"),
        }
        assert!(run(&t, "6GiB").is_ok());
    }

    #[test]
    fn unmovable_allocations_in_a_movable_machine_fall_back_and_count_extfrag() {
        // Movable allocations fill most of memory, then unmovable ones must steal.
        let mut t = String::new();
        let n = 60000u64;
        for i in 0..n {
            t += &format!(" a-1 [000] ..... 1.0: mm_page_alloc: page=1 pfn=0x{i:x} order=0 migratetype=1 gfp_flags=GFP_HIGHUSER_MOVABLE\n");
        }
        for i in (0..n).step_by(2) {
            t += &format!(" a-1 [000] ..... 2.0: mm_page_free: page=1 pfn=0x{i:x} order=0\n");
        }
        for i in 0..20000u64 {
            t += &format!(" a-1 [000] ..... 3.0: mm_page_alloc: page=1 pfn=0x{:x} order=0 migratetype=0 gfp_flags=GFP_KERNEL\n", n + i);
        }
        let r = run(&t, "512MiB").unwrap();
        assert_eq!(r.failed_allocs, 0);
        assert!(r.extfrag > 0, "{r:?}");
        assert_eq!(r.migratetype_mismatch, 0);
    }
}
