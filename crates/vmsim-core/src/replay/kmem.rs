//! Replay of a recorded kmem trace against the page allocator.
//!
//! The input is ftrace text of `kmem:mm_page_alloc`, `mm_page_free`,
//! `mm_page_free_batched` and `mm_page_alloc_extfrag`, as a 6.18 kernel prints
//! them in /sys/kernel/tracing/trace (`comm-pid [cpu] flags ts: event: fields`)
//! or as `perf script` prints them (`comm pid [cpu] ts: kmem:event: fields`).
//! A task of the simulated machine (`replay`) reads the trace as it goes and
//! issues each event at its recorded time since the first: each recorded
//! allocation asks the simulated kernel's allocator (__alloc_pages: fast path,
//! watermarks, fallback, slow path) for the same order with the same GFP flags
//! (hence the same migratetype); the recorded pfn names the allocation, and its
//! free (by pfn) frees the simulated block it was mapped to. The kernel threads
//! (kswapd, kcompactd, the flushers) run around it, and the scenario's workloads
//! too when asked. The recording's own extfrag events are counted beside the
//! ones the simulated allocator fires.
//!
//! Simplifications: the simulated machine starts empty (pages allocated before
//! the recording began are absent, and their frees are counted and skipped);
//! the replayed pages are held by the replay task, not mapped or cached, so
//! reclaim cannot free them and compaction cannot move them.

use crate::config::Scenario;
use crate::engine::{Os, Program, Step, StepCtx, StepOut};
use crate::kernel::{AllocResult, Kernel};
use crate::mm::gfp::Gfp;
use crate::mm::mmzone::NR_PAGE_ORDERS;
use crate::mm::page::{IntMap, PageKind, Pfn, PAGE_SIZE};
use serde::Serialize;
use std::cell::RefCell;
use std::io::{BufRead, Read};
use std::rc::Rc;

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
    let mut lines = LineReader::new(r);
    while let Some((n, line)) = lines.next_line()? {
        f(n, line);
    }
    Ok(())
}

/// Reads a trace one parsed line at a time, in constant memory.
pub struct LineReader<R> {
    /// The text.
    r: R,
    /// The line being read.
    buf: Vec<u8>,
    /// Lines read so far.
    n: u64,
}

impl<R: BufRead> LineReader<R> {
    /// A reader at the start of `r`.
    pub fn new(r: R) -> Self {
        LineReader {
            r,
            buf: Vec::with_capacity(512),
            n: 0,
        }
    }

    /// The next line and its number; None at the end (a line longer than 64 KiB is
    /// read to its end and given as malformed).
    pub fn next_line(&mut self) -> std::io::Result<Option<(u64, Line)>> {
        const MAX: u64 = 64 << 10;
        self.buf.clear();
        let got = (&mut self.r).take(MAX).read_until(b'\n', &mut self.buf)? as u64;
        if got == 0 {
            return Ok(None);
        }
        self.n += 1;
        if self.buf.last() != Some(&b'\n') && got == MAX {
            // The rest of an over-long line, read and dropped in pieces.
            while !self.buf.ends_with(b"\n") {
                self.buf.clear();
                if (&mut self.r).take(MAX).read_until(b'\n', &mut self.buf)? == 0 {
                    break;
                }
            }
            return Ok(Some((self.n, Line::Malformed("longer than 64 KiB".into()))));
        }
        let line = match std::str::from_utf8(&self.buf) {
            Ok(s) => parse_line(s.trim_end_matches(['\n', '\r'])),
            Err(_) => Line::Malformed("not UTF-8 text".into()),
        };
        Ok(Some((self.n, line)))
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
    /// Of them, those the replayed allocations fired.
    pub extfrag_replayed: u64,
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
    /// Extfrag events fired by the replayed allocations themselves (the rest are the
    /// kernel threads' and the workloads').
    pub extfrag_replayed: u64,
    /// Of them, fragmenting.
    pub extfrag_replayed_fragmenting: u64,
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
    /// /proc/vmstat at the end.
    pub vmstat: String,
    /// Simulated time the replay took [s].
    pub seconds: f64,
    /// The OOM killer killed the replay task before its end.
    pub killed: bool,
}

/// What the replay task and the driver share.
struct Shared {
    /// Recorded pfn → simulated block (head, order).
    live: IntMap<u64, (Pfn, u8)>,
    /// Pages held.
    held: u64,
    /// The figures.
    r: KmemReport,
    /// The replay task has issued its last event (or was killed).
    done: bool,
    /// When it did [ns].
    end: u64,
    /// The trace could not be read to its end (the reason).
    error: Option<String>,
}

/// The replay task's program: reads the trace as it goes and issues each event at its
/// recorded time (relative to the first), in the task's context, as the recorded
/// process did; what the simulated kernel does meanwhile (kswapd, kcompactd, the
/// flushers, the scenario's workloads when they run) goes on around it.
struct ReplayTask<R> {
    /// The trace.
    lines: LineReader<R>,
    /// The next event, not issued yet: its time since the first event [ns].
    pending: Option<(u64, KmemEvent)>,
    /// Time of the first event in the trace [ns].
    t0: Option<u64>,
    /// Shared with the driver.
    st: Rc<RefCell<Shared>>,
}

impl<R: BufRead> ReplayTask<R> {
    /// The next event of the trace, counting the lines that are not events; None at
    /// its end or when it cannot be read.
    fn next_event(&mut self) -> Option<(u64, KmemEvent)> {
        loop {
            let (n, line) = match self.lines.next_line() {
                Ok(Some(l)) => l,
                Ok(None) => return None,
                Err(e) => {
                    self.st.borrow_mut().error =
                        Some(format!("the trace could not be read to its end: {e}"));
                    return None;
                }
            };
            let mut st = self.st.borrow_mut();
            st.r.lines = n;
            match line {
                Line::Other => {}
                Line::Malformed(why) => {
                    st.r.malformed += 1;
                    if st.r.malformed_examples.len() < MAX_BAD_LINES_SHOWN {
                        st.r.malformed_examples.push((n, why));
                    }
                }
                Line::Event(ts, ev) => {
                    let t0 = *self.t0.get_or_insert(ts);
                    return Some((ts.saturating_sub(t0), ev));
                }
            }
        }
    }
}

/// What became of one replayed event.
enum Issued {
    /// Done; the next one may follow.
    Done,
    /// The allocation must be tried again (the task slept or must sleep first).
    Retry,
    /// The OOM killer killed the replay task.
    Killed,
}

impl<R: BufRead> Program<Kernel> for ReplayTask<R> {
    fn step(&mut self, cx: &mut StepCtx<Kernel>) -> StepOut {
        let end = cx.now + cx.quantum;
        let out = |next| StepOut { user_ns: 0, next };
        loop {
            let Some((at, ev)) = self.pending.take().or_else(|| self.next_event()) else {
                let mut st = self.st.borrow_mut();
                st.done = true;
                st.end = cx.k.current().clock();
                return out(Step::Exit);
            };
            let cur = cx.k.current();
            let clock = cur.clock() + cur.sleep;
            if at > clock {
                self.pending = Some((at, ev));
                return out(Step::Sleep(at - clock));
            }
            if clock >= end {
                self.pending = Some((at, ev));
                return out(Step::Run);
            }
            let issued = issue(cx, &mut self.st.borrow_mut(), ev);
            match issued {
                Issued::Done => {}
                Issued::Retry => {
                    self.pending = Some((at, ev));
                    return out(Step::Run);
                }
                Issued::Killed => {
                    let mut st = self.st.borrow_mut();
                    st.r.killed = true;
                    st.done = true;
                    st.end = cx.k.current().clock();
                    return out(Step::Exit);
                }
            }
            let cur = cx.k.current();
            if cur.sleep > 0 || cur.block_on.is_some() {
                // The kernel put the task to sleep (a throttle, I/O): the step ends here.
                return out(Step::Run);
            }
        }
    }
}

/// Issues one recorded event in the replay task's context.
fn issue(cx: &mut StepCtx<Kernel>, st: &mut Shared, ev: KmemEvent) -> Issued {
    match ev {
        KmemEvent::Alloc { pfn: None, .. } => st.r.recorded_failed_allocs += 1,
        KmemEvent::Alloc {
            pfn: Some(pfn),
            order,
            gfp,
            migratetype,
        } => return alloc(cx, st, pfn, order as usize, Gfp(gfp), migratetype),
        KmemEvent::Free { pfn, .. } => {
            if free(cx, st, pfn) {
                st.r.frees += 1;
            } else {
                st.r.unknown_frees += 1;
            }
        }
        KmemEvent::Extfrag { fragmenting } => {
            st.r.recorded_extfrag += 1;
            st.r.recorded_extfrag_fragmenting += fragmenting as u64;
        }
    }
    Issued::Done
}

/// A recorded allocation: the same request of the simulated allocator (__alloc_pages),
/// repeated after a throttle as the task's own allocations are.
fn alloc(
    cx: &mut StepCtx<Kernel>,
    st: &mut Shared,
    pfn: u64,
    order: usize,
    gfp: Gfp,
    migratetype: i32,
) -> Issued {
    if free(cx, st, pfn) {
        // Its free was not recorded: the old block went first.
        st.r.realloc_live += 1;
    }
    let before = (
        cx.k.mm.frag.extfrag_events,
        cx.k.mm.frag.extfrag_fragmenting,
    );
    let r = cx.k.alloc_pages(gfp, order, cx.tid);
    st.r.extfrag_replayed += cx.k.mm.frag.extfrag_events - before.0;
    st.r.extfrag_replayed_fragmenting += cx.k.mm.frag.extfrag_fragmenting - before.1;
    if !matches!(r, AllocResult::Retry)
        && crate::mm::gfp::gfp_migratetype(gfp, true) as i32 != migratetype
    {
        st.r.migratetype_mismatch += 1;
    }
    match r {
        AllocResult::Page(p) => {
            let page = &mut cx.k.mm.map[p as usize];
            page.set_kind(PageKind::Held);
            page.owner = cx.tid;
            st.live.insert(pfn, (p, order as u8));
            st.held += 1 << order;
            st.r.allocs += 1;
            st.r.allocs_by_order[order] += 1;
            Issued::Done
        }
        AllocResult::Retry => Issued::Retry,
        AllocResult::Failed => {
            st.r.failed_allocs += 1;
            Issued::Done
        }
        AllocResult::Killed => Issued::Killed,
    }
}

/// Frees the simulated block a recorded pfn was mapped to; false if none.
fn free(cx: &mut StepCtx<Kernel>, st: &mut Shared, pfn: u64) -> bool {
    let Some((p, order)) = st.live.remove(&pfn) else {
        return false;
    };
    let page = &mut cx.k.mm.map[p as usize];
    page.set_kind(PageKind::Other);
    page.owner = 0;
    st.held -= 1 << order;
    let cpu = cx.k.current().cpu;
    cx.k.mm.free_pages(p, order as usize, cpu);
    true
}

/// The memory a machine needs for pfns up to `max_pfn` [bytes], rounded up to 1 GiB.
pub fn memory_needed(max_pfn: u64) -> u64 {
    ((max_pfn + 1) * PAGE_SIZE).div_ceil(1 << 30) << 30
}

/// The allocator's state at time `t` [ns].
fn sample(k: &Kernel, st: &Shared, extfrag0: u64, t: u64) -> Sample {
    let mm = &k.mm;
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
    Sample {
        time_seconds: t as f64 / 1e9,
        free_blocks,
        free_pages,
        largest_free_order: largest,
        pageblocks,
        mixed_pageblocks: mm.mixed_pageblocks(),
        extfrag: mm.frag.extfrag_events - extfrag0,
        extfrag_replayed: st.r.extfrag_replayed,
        recorded_extfrag: st.r.recorded_extfrag,
        held_pages: st.held,
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
///
/// The scenario's machine and kernel boot with their kernel threads; with `workloads`
/// the scenario's tasks run beside the replay (a background load), else the replay
/// task runs alone. A sample of the allocator is taken every `interval_ns` of time
/// from the first event (before the events of that instant), and a last one when the
/// replay task has issued its last event; the run ends then, whatever the workloads
/// were doing.
pub fn replay_kmem(
    open: &mut dyn FnMut() -> Result<Box<dyn BufRead>, String>,
    sc: &Scenario,
    interval_ns: u64,
    workloads: bool,
) -> Result<KmemReport, KmemError> {
    let s = survey(&mut *open().map_err(KmemError::Other)?).map_err(KmemError::Other)?;
    let mut eng = crate::sim::build_with(sc, workloads);
    let frames = eng.kernel.mm.map.len() as u64;
    if let Some(max_pfn) = s.max_pfn {
        if max_pfn >= frames {
            return Err(KmemError::TooSmall {
                max_pfn,
                frames,
                needed: memory_needed(max_pfn),
            });
        }
    }
    let extfrag0 = (
        eng.kernel.mm.frag.extfrag_events,
        eng.kernel.mm.frag.extfrag_fragmenting,
    );
    let st = Rc::new(RefCell::new(Shared {
        live: IntMap::default(),
        held: 0,
        r: KmemReport {
            allocs_by_order: vec![0; NR_PAGE_ORDERS],
            ..Default::default()
        },
        done: false,
        end: 0,
        error: None,
    }));
    let task = ReplayTask {
        lines: LineReader::new(open().map_err(KmemError::Other)?),
        pending: None,
        t0: None,
        st: Rc::clone(&st),
    };
    let tid = eng.spawn("replay", 0, 0, false, Box::new(task));
    let interval = interval_ns.max(1);
    let mut samples = Vec::new();
    let mut t = 0u64;
    // Over when the task has issued its last event, or was killed (by another task's
    // OOM kill, its program does not run again).
    let over = |eng: &crate::kernel::Engine| {
        st.borrow().done || eng.task_state(tid) == crate::engine::TaskState::Dead
    };
    loop {
        // One event at a time, so that the run stops at the replay task's last event
        // (the workloads' later work is not counted).
        while t > 0 && !over(&eng) && !eng.run_until_at_most(t - 1, 1) {}
        if over(&eng) {
            if !st.borrow().done {
                let mut s = st.borrow_mut();
                s.r.killed = true;
                s.done = true;
                s.end = eng.now;
            }
            break;
        }
        if eng.next_event_time().is_none() {
            // Nothing left to run: the replay task cannot go on (it cannot happen while
            // the task lives, as it sleeps on a timer or runs).
            return Err(KmemError::Other("the replay stopped before its end".into()));
        }
        samples.push(sample(&eng.kernel, &st.borrow(), extfrag0.0, t));
        t += interval;
    }
    let mut st = st.borrow_mut();
    let end = st.end;
    if let Some(e) = st.error.take() {
        return Err(KmemError::Other(e));
    }
    let last = sample(&eng.kernel, &st, extfrag0.0, end);
    if samples.last().map(|s: &Sample| s.time_seconds) != Some(last.time_seconds) {
        samples.push(last);
    }
    let k = &eng.kernel;
    let mut r = std::mem::take(&mut st.r);
    r.samples = samples;
    r.extfrag = k.mm.frag.extfrag_events - extfrag0.0;
    r.extfrag_fragmenting = k.mm.frag.extfrag_fragmenting - extfrag0.1;
    r.buddyinfo = k.mm.buddyinfo();
    r.pagetypeinfo = k.mm.pagetypeinfo();
    r.vmstat = crate::mm::vmstat::vmstat_text(&k.vmstat_snapshot());
    r.seconds = end as f64 / 1e9;
    Ok(r)
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
            false,
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
        // the events of its time: none held, 64 blocks of 4 pages, all freed; and a
        // last one after the last event (2 s and the cost of issuing it).
        let held: Vec<u64> = r.samples.iter().map(|s| s.held_pages).collect();
        assert_eq!(held, vec![0, 256, 0, 0]);
        let times: Vec<f64> = r.samples.iter().map(|s| s.time_seconds).collect();
        assert_eq!(times[..3], [0.0, 1.0, 2.0]);
        assert!(times[3] > 2.0 && times[3] < 2.001, "{times:?}");
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

    /// A vmstat counter of a report's /proc/vmstat.
    fn vmstat(r: &KmemReport, name: &str) -> u64 {
        r.vmstat
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap()
    }

    /// Unmovable allocations of order 0, `n` of them over `seconds`, never freed.
    fn kernel_allocs(n: u64, seconds: u64) -> String {
        let mut t = String::new();
        for i in 0..n {
            let ns = i * seconds * 1_000_000_000 / n;
            t += &format!(
                " a-1 [000] ..... {}.{:09}: mm_page_alloc: page=1 pfn=0x{i:x} order=0 migratetype=0 gfp_flags=GFP_KERNEL\n",
                ns / 1_000_000_000,
                ns % 1_000_000_000
            );
        }
        t
    }

    fn run_sc(text: &str, sc: &Scenario, workloads: bool) -> KmemReport {
        run_every(text, sc, workloads, 100_000_000)
    }

    fn run_every(text: &str, sc: &Scenario, workloads: bool, interval: u64) -> KmemReport {
        let text = text.to_string();
        replay_kmem(
            &mut || Ok(Box::new(std::io::Cursor::new(text.clone().into_bytes()))),
            sc,
            interval,
            workloads,
        )
        .unwrap()
    }

    #[test]
    fn kswapd_runs_while_the_replay_takes_memory_below_the_watermarks() {
        // Asked for more than a 128 MiB machine has, the replay task is the OOM
        // killer's victim, and the report says so.
        let sc = scenario("128MiB");
        let over = run_sc(&kernel_allocs(32_768, 3), &sc, false);
        assert!(over.killed && over.allocs < 32_768, "{}", over.allocs);
        // Fifty pages fewer than it got then: below the low watermark, so kswapd is
        // woken, finds nothing to reclaim, and every allocation succeeds.
        let n = over.allocs - 50;
        let r = run_sc(&kernel_allocs(n, 3), &sc, false);
        assert_eq!((r.allocs, r.failed_allocs, r.killed), (n, 0, false));
        assert!(vmstat(&r, "pageoutrun") > 0, "{}", r.vmstat);
        assert_eq!(vmstat(&r, "pgsteal_kswapd"), 0);
        // Issued at their recorded times: the replay ends with the trace.
        assert!(r.seconds > 2.99 && r.seconds < 3.1, "{}", r.seconds);
    }

    #[test]
    fn the_scenarios_workloads_run_beside_the_replay_only_when_asked() {
        // A reader fills a 256 MiB machine's page cache; kswapd reclaims it while the
        // replay's unmovable allocations go on.
        let sc = Scenario::from_toml(
            "[machine]\nmemory = \"256MiB\"\ncpus = 2\n[disk]\nread_bandwidth = 2000000000\n\
             [[file]]\nname = \"f\"\nsize = \"512MiB\"\n\
             [[task]]\nname = \"r\"\nprogram = [{ op = \"read\", file = \"f\" }]\n",
        )
        .unwrap();
        let trace = kernel_allocs(4_000, 2);
        let alone = run_sc(&trace, &sc, false);
        let beside = run_sc(&trace, &sc, true);
        assert_eq!(vmstat(&alone, "pgsteal_kswapd"), 0);
        assert!(vmstat(&beside, "pgsteal_kswapd") > 0, "{}", beside.vmstat);
        assert_eq!((alone.allocs, beside.allocs), (4_000, 4_000));
        // The same inputs give the same report, byte for byte.
        let again = run_sc(&trace, &sc, true);
        assert_eq!(
            serde_json::to_string(&beside).unwrap(),
            serde_json::to_string(&again).unwrap()
        );
        // Sampling does not change the run, and it ends with the replay's last event
        // (the reader, which goes on, is not followed further).
        let sparse = run_every(&trace, &sc, true, 700_000_000);
        assert_eq!(sparse.vmstat, beside.vmstat);
        assert_eq!(sparse.samples.last().unwrap().time_seconds, beside.seconds);
    }
}
