//! The trace buffer: whole lines with the `comm-pid [cpu] flags timestamp:`
//! prefix, and the `trace` file header.

use std::fmt::Write as _;
use std::io;

use super::event::{TraceEvent, TraceEventId};
use super::filter::EventFilter;
use super::format::{event_name, render};
use super::TraceFormat;

/// The five "irq-info" characters after the CPU column
/// (`trace_print_lat_fmt()`): irqs-off/BH-disabled, need-resched,
/// hardirq/softirq, preempt depth, migrate-disable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash)]
pub struct LineFlags {
    /// Interrupts disabled (`d`; with `bh_off`, `D`).
    pub irqs_off: bool,
    /// Bottom halves disabled (`b`; with `irqs_off`, `D`).
    pub bh_off: bool,
    /// TIF_NEED_RESCHED set (`N`).
    pub need_resched: bool,
    /// In hard interrupt context (`h`; with `softirq`, `H`).
    pub hardirq: bool,
    /// In softirq context (`s`).
    pub softirq: bool,
    /// Preemption depth (low 4 bits of preempt_count, printed in hex; 0 is `.`).
    pub preempt_depth: u8,
    /// Migrate-disable depth (0 is `.`).
    pub migrate_disable: u8,
}

impl LineFlags {
    /// `.....`: process context, nothing held (most events).
    pub const NONE: LineFlags = LineFlags {
        irqs_off: false,
        bh_off: false,
        need_resched: false,
        hardirq: false,
        softirq: false,
        preempt_depth: 0,
        migrate_disable: 0,
    };

    /// This with preemption depth `n` (`...1.` for `n == 1`).
    pub const fn preempt(self, n: u8) -> LineFlags {
        LineFlags {
            preempt_depth: n,
            ..self
        }
    }

    /// This with interrupts disabled.
    pub const fn irqs_off(self) -> LineFlags {
        LineFlags {
            irqs_off: true,
            ..self
        }
    }

    /// This with need-resched set (`.N...`).
    pub const fn need_resched(self) -> LineFlags {
        LineFlags {
            need_resched: true,
            ..self
        }
    }

    /// This in softirq context (`..s..`).
    pub const fn softirq(self) -> LineFlags {
        LineFlags {
            softirq: true,
            ..self
        }
    }

    /// `...1.`: one spinlock held (e.g. `writeback_start` under `wb->list_lock`).
    pub const LOCKED: LineFlags = LineFlags::NONE.preempt(1);
    /// `d..1.`: a `spin_lock_irq` held (e.g. `mm_vmscan_lru_isolate` under
    /// `lruvec->lru_lock`).
    pub const IRQ_LOCKED: LineFlags = LineFlags::NONE.irqs_off().preempt(1);
    /// `d..3.`: zone lock taken with IRQs off inside a pcp-locked section
    /// (e.g. `mm_page_alloc_extfrag` from `rmqueue_bulk`).
    pub const ZONE_LOCKED_UNDER_PCP: LineFlags = LineFlags::NONE.irqs_off().preempt(3);

    /// The five characters.
    pub fn chars(&self) -> [char; 5] {
        let irq = match (self.irqs_off, self.bh_off) {
            (true, true) => 'D',
            (true, false) => 'd',
            (false, true) => 'b',
            (false, false) => '.',
        };
        let resched = if self.need_resched { 'N' } else { '.' };
        let hs = match (self.hardirq, self.softirq) {
            (true, true) => 'H',
            (true, false) => 'h',
            (false, true) => 's',
            (false, false) => '.',
        };
        let digit = |n: u8| {
            if n == 0 {
                '.'
            } else {
                char::from_digit(u32::from(n & 0xf), 16).unwrap_or('.')
            }
        };
        [
            irq,
            resched,
            hs,
            digit(self.preempt_depth),
            digit(self.migrate_disable),
        ]
    }

    /// Parses the five characters as printed (`d..1.`, `.N...`, `..s1.`).
    pub fn parse(s: &str) -> Option<LineFlags> {
        let c: Vec<char> = s.chars().collect();
        if c.len() != 5 {
            return None;
        }
        let mut f = LineFlags::NONE;
        match c[0] {
            'D' => {
                f.irqs_off = true;
                f.bh_off = true;
            }
            'd' => f.irqs_off = true,
            'b' => f.bh_off = true,
            '.' => {}
            _ => return None,
        }
        match c[1] {
            'N' => f.need_resched = true,
            '.' => {}
            _ => return None,
        }
        match c[2] {
            'H' => {
                f.hardirq = true;
                f.softirq = true;
            }
            'h' => f.hardirq = true,
            's' => f.softirq = true,
            '.' => {}
            _ => return None,
        }
        let num = |ch: char| -> Option<u8> {
            if ch == '.' {
                Some(0)
            } else {
                ch.to_digit(16).map(|d| d as u8)
            }
        };
        f.preempt_depth = num(c[3])?;
        f.migrate_disable = num(c[4])?;
        Some(f)
    }
}

impl std::fmt::Display for LineFlags {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in self.chars() {
            f.write_char(c)?;
        }
        Ok(())
    }
}

/// The flags the real kernel shows for `ev` when it fires from its usual
/// call site (what [`Tracer::emit`] uses):
///
/// - `mm_vmscan_lru_isolate`: `d..1.` (under `spin_lock_irq(&lruvec->lru_lock)`);
/// - `mm_page_alloc_extfrag`, `mm_page_pcpu_drain`, and
///   `mm_page_alloc_zone_locked` with `percpu_refill`: `d..3.` (zone lock
///   inside a pcp-locked section); `mm_page_alloc_zone_locked` without it:
///   `d..1.`;
/// - `writeback_start`/`writeback_written`: `...1.` (under `wb->list_lock`);
/// - everything else: `.....`.
///
/// The flags are declared with each event (`[flags = …]` in event.rs).
pub fn default_flags(ev: &TraceEvent) -> LineFlags {
    ev.default_flags()
}

/// TASK_COMM_LEN - 1: the kernel keeps at most 15 bytes of a task's name.
const COMM_MAX: usize = 15;

/// Formats one whole line (without the newline) as `trace_print_context()`
/// and the event's output do: `%16s-%-7d [%03d] ` (comm right-aligned, pid
/// left-aligned), the five flag characters, ` %5lu.%06lu: ` (seconds and
/// microseconds of `ts_ns`), `name: details`.
///
/// `comm` is cut to 15 bytes as the kernel's `comm[16]` is.
pub fn format_line(
    ts_ns: u64,
    cpu: u32,
    comm: &str,
    pid: u32,
    flags: LineFlags,
    name: &str,
    details: &str,
) -> String {
    let comm = truncate_comm(comm);
    let secs = ts_ns / 1_000_000_000;
    let usecs = (ts_ns % 1_000_000_000) / 1_000;
    let mut s = String::with_capacity(64 + name.len() + details.len());
    let _ = write!(
        s,
        "{comm:>16}-{pid:<7} [{cpu:03}] {flags} {secs:5}.{usecs:06}: {name}: {details}"
    );
    s
}

fn truncate_comm(comm: &str) -> &str {
    if comm.len() <= COMM_MAX {
        return comm;
    }
    let mut end = COMM_MAX;
    while !comm.is_char_boundary(end) {
        end -= 1;
    }
    &comm[..end]
}

/// The `trace` file header of a nop tracer with the default options
/// (`irq-info` on, `record-tgid` off), for `entries` lines and `nr_cpus`
/// online CPUs.
pub fn header(entries: usize, nr_cpus: u32) -> String {
    header_written(entries, entries as u64, nr_cpus)
}

/// [`header`] of a buffer that kept `entries` of the `written` events fired (ftrace's
/// `entries-in-buffer/entries-written` differ when events were lost).
pub fn header_written(entries: usize, written: u64, nr_cpus: u32) -> String {
    format!(
        "# tracer: nop\n\
         #\n\
         # entries-in-buffer/entries-written: {entries}/{written}   #P:{nr_cpus}\n\
         #\n\
         #                                _-----=> irqs-off/BH-disabled\n\
         #                               / _----=> need-resched\n\
         #                              | / _---=> hardirq/softirq\n\
         #                              || / _--=> preempt-depth\n\
         #                              ||| / _-=> migrate-disable\n\
         #                              |||| /     delay\n\
         #           TASK-PID     CPU#  |||||  TIMESTAMP  FUNCTION\n\
         #              | |         |   |||||     |         |\n"
    )
}

/// A simulated ftrace buffer.
///
/// It records only the enabled events ([`EventFilter`]; by default vmscan,
/// compaction and writeback, not kmem). Code on a hot path asks
/// [`Tracer::enabled`] before it builds an event.
///
/// Lines are kept per CPU in emit order and read out as the kernel's
/// iterator does: repeatedly the oldest head among the per-CPU buffers (ties
/// to the lowest CPU). With monotonic per-CPU timestamps that is a global
/// time order.
///
/// ```
/// use vmsim_core::trace::{TraceEvent, TraceFormat, Tracer};
/// let mut t = Tracer::new(TraceFormat::Modern, 2);
/// t.emit(199_785_668_000, 1, "dd", 4454,
///        &TraceEvent::MmVmscanMemcgReclaimEnd { nr_reclaimed: 256 });
/// let mut out = Vec::new();
/// t.write_to(&mut out).unwrap();
/// assert!(String::from_utf8(out).unwrap().ends_with(
///     "              dd-4454    [001] .....   199.785668: \
///      mm_vmscan_memcg_reclaim_end: nr_reclaimed=256\n"));
/// ```
#[derive(Debug, Clone)]
pub struct Tracer {
    fmt: TraceFormat,
    nr_cpus: u32,
    /// Per CPU: (timestamp, line) in emit order.
    cpus: Vec<Vec<(u64, String)>>,
    entries: usize,
    events: EventFilter,
    /// Lines kept at most; later events are dropped and counted.
    limit: usize,
    /// Events fired after the buffer was full.
    dropped: u64,
}

/// The most trace lines a run keeps (about 150 bytes each in memory, so ~1.5 GB):
/// when the buffer is full, later events are dropped and counted, as ftrace drops
/// them when its ring buffer is full and not in overwrite mode, and the header's
/// `entries-in-buffer/entries-written` shows how many were lost.
pub const MAX_TRACE_EVENTS: usize = 10_000_000;

impl Tracer {
    /// An empty buffer printing `fmt`, on a machine with `nr_cpus` CPUs
    /// (the header's `#P:`), recording the default events
    /// ([`EventFilter::default`]).
    pub fn new(fmt: TraceFormat, nr_cpus: u32) -> Tracer {
        Tracer::with_events(fmt, nr_cpus, EventFilter::default())
    }

    /// [`Tracer::new`] recording the events of `events`.
    pub fn with_events(fmt: TraceFormat, nr_cpus: u32, events: EventFilter) -> Tracer {
        Tracer {
            fmt,
            nr_cpus,
            cpus: vec![Vec::new(); nr_cpus.max(1) as usize],
            entries: 0,
            events,
            limit: MAX_TRACE_EVENTS,
            dropped: 0,
        }
    }

    /// Keeps at most `limit` lines from now on (default [`MAX_TRACE_EVENTS`]).
    pub fn set_limit(&mut self, limit: usize) {
        self.limit = limit;
    }

    /// Events fired after the buffer was full, not kept.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// The events this buffer records.
    pub fn events(&self) -> &EventFilter {
        &self.events
    }

    /// Records the events of `events` from now on (writing `set_event`).
    pub fn set_events(&mut self, events: EventFilter) {
        self.events = events;
    }

    /// Whether event `id` is recorded: the cheap check to make before building
    /// an event on a hot path (the kernel's `trace_<event>_enabled()`).
    #[inline(always)]
    pub fn enabled(&self, id: TraceEventId) -> bool {
        self.events.enabled(id)
    }

    /// Whether `ev` is recorded.
    #[inline(always)]
    pub fn enabled_for(&self, ev: &TraceEvent) -> bool {
        self.events.enabled(ev.id())
    }

    /// The format this buffer prints.
    pub fn format(&self) -> TraceFormat {
        self.fmt
    }

    /// Records `ev` fired at `ts_ns` (simulated nanoseconds since boot) on
    /// `cpu` by task `comm`/`pid`, with the flags the kernel shows at the
    /// event's usual call site ([`default_flags`]). Events not enabled, and
    /// events without a form in this buffer's format (see [`render`]), are
    /// dropped and not counted.
    pub fn emit(&mut self, ts_ns: u64, cpu: u32, comm: &str, pid: u32, ev: &TraceEvent) {
        self.emit_with_flags(ts_ns, cpu, comm, pid, default_flags(ev), ev);
    }

    /// [`Tracer::emit`] with explicit irq-info flags (e.g. `.N...` when the
    /// task has a reschedule pending, `..s1.` for a free from softirq).
    pub fn emit_with_flags(
        &mut self,
        ts_ns: u64,
        cpu: u32,
        comm: &str,
        pid: u32,
        flags: LineFlags,
        ev: &TraceEvent,
    ) {
        if !self.enabled_for(ev) {
            return;
        }
        let Some(details) = render(ev, self.fmt) else {
            return;
        };
        if self.entries >= self.limit {
            self.dropped += 1;
            return;
        }
        let line = format_line(
            ts_ns,
            cpu,
            comm,
            pid,
            flags,
            event_name(ev, self.fmt),
            &details,
        );
        let c = cpu as usize;
        if c >= self.cpus.len() {
            self.cpus.resize_with(c + 1, Vec::new);
        }
        self.cpus[c].push((ts_ns, line));
        self.entries += 1;
    }

    /// Number of lines recorded.
    pub fn len(&self) -> usize {
        self.entries
    }

    /// Whether nothing has been recorded.
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }

    /// The lines (without newlines) in output order.
    pub fn lines(&self) -> Vec<&str> {
        let mut out = Vec::with_capacity(self.entries);
        let mut heads = vec![0usize; self.cpus.len()];
        loop {
            let mut best: Option<(usize, u64)> = None;
            for (c, buf) in self.cpus.iter().enumerate() {
                if let Some(&(ts, _)) = buf.get(heads[c]) {
                    let older = match best {
                        None => true,
                        Some((_, bts)) => ts < bts,
                    };
                    if older {
                        best = Some((c, ts));
                    }
                }
            }
            let Some((c, _)) = best else { break };
            out.push(self.cpus[c][heads[c]].1.as_str());
            heads[c] += 1;
        }
        out
    }

    /// The header for the current contents.
    pub fn header(&self) -> String {
        header_written(
            self.entries,
            self.entries as u64 + self.dropped,
            self.nr_cpus,
        )
    }

    /// Writes the whole `trace` file: header, then one line per event.
    pub fn write_to(&self, w: &mut impl io::Write) -> io::Result<()> {
        w.write_all(self.header().as_bytes())?;
        for l in self.lines() {
            w.write_all(l.as_bytes())?;
            w.write_all(b"\n")?;
        }
        Ok(())
    }

    /// Forgets every line (like `echo > trace`).
    pub fn clear(&mut self) {
        for b in &mut self.cpus {
            b.clear();
        }
        self.entries = 0;
        self.dropped = 0;
    }
}
