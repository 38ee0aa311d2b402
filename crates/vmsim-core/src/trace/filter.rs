//! Which tracepoints a trace records: the events enabled in
//! `/sys/kernel/tracing/set_event` (kernel/trace/trace_events.c,
//! `ftrace_set_clr_event()`), selected as `set_event` and `trace-cmd record -e`
//! select them.
//!
//! A selector is
//!
//! - `SYSTEM` or `SYSTEM:*` (or `SYSTEM:`): every event of the system;
//! - `SYSTEM:EVENT`: one event; `*:EVENT` (or `:EVENT`, or `EVENT` alone): the
//!   event of that name in any system;
//! - `*:*` or `all` (trace-cmd's `-e all`): every event;
//! - any of these after `!`: disable instead of enable (`echo '!…' >> set_event`).
//!
//! Names are the 6.18 ones; a legacy name (`mm_vmscan_writepage`) selects its
//! event too. A selector that matches nothing is an error naming it (the kernel
//! answers `EINVAL`).
//!
//! With nothing selected ([`EventFilter::default`]) a trace records every
//! event of vmscan, compaction and writeback and none of kmem: kmem's page
//! events fire on every page allocation and free and would swamp the trace, so
//! they are enabled explicitly, as on a real machine.

use std::fmt;

use super::{TraceEvent, TraceEventId, TraceSystem, NR_TRACE_EVENTS, TRACE_EVENTS};

/// The systems whose events a trace records when nothing is selected.
pub const DEFAULT_SYSTEMS: &[TraceSystem] = &[
    TraceSystem::Vmscan,
    TraceSystem::Compaction,
    TraceSystem::Writeback,
];

/// A selector that names no event.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(String);

/// A set of enabled tracepoints (what `set_event` lists).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct EventFilter {
    on: [bool; NR_TRACE_EVENTS],
}

impl EventFilter {
    /// No event enabled (an empty `set_event`).
    pub const fn none() -> EventFilter {
        EventFilter {
            on: [false; NR_TRACE_EVENTS],
        }
    }

    /// Every event enabled (`*:*`).
    pub const fn all() -> EventFilter {
        EventFilter {
            on: [true; NR_TRACE_EVENTS],
        }
    }

    /// Every event of `systems`.
    pub fn systems(systems: &[TraceSystem]) -> EventFilter {
        let mut f = EventFilter::none();
        for e in TRACE_EVENTS {
            f.on[e.id.index()] = systems.contains(&e.system);
        }
        f
    }

    /// The events `lists` select, starting from none: each list is one or more
    /// comma-separated selectors (see the module docs), applied in order.
    pub fn parse<I, S>(lists: I) -> Result<EventFilter, SelectorError>
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut f = EventFilter::none();
        for list in lists {
            let list = list.as_ref();
            for sel in list.split(',') {
                if sel.trim().is_empty() {
                    let msg = format!("empty trace event selector in '{list}'");
                    return Err(SelectorError(msg));
                }
                f.apply(sel)?;
            }
        }
        Ok(f)
    }

    /// Enables (or, with a leading `!`, disables) the events one selector names
    /// (`ftrace_set_clr_event()`).
    pub fn apply(&mut self, selector: &str) -> Result<(), SelectorError> {
        let sel = selector.trim();
        let (set, body) = match sel.strip_prefix('!') {
            Some(rest) => (false, rest.trim_start()),
            None => (true, sel),
        };
        for id in select(body)? {
            self.on[id.index()] = set;
        }
        Ok(())
    }

    /// Whether `id` is enabled.
    #[inline(always)]
    pub fn enabled(&self, id: TraceEventId) -> bool {
        self.on[id.index()]
    }

    /// Enables or disables one event.
    pub fn set(&mut self, id: TraceEventId, on: bool) {
        self.on[id.index()] = on;
    }

    /// The enabled events, in id order.
    pub fn events(&self) -> impl Iterator<Item = TraceEventId> + '_ {
        TraceEventId::all().filter(|&id| self.enabled(id))
    }
}

impl Default for EventFilter {
    /// Every event of [`DEFAULT_SYSTEMS`] (vmscan, compaction, writeback).
    fn default() -> EventFilter {
        EventFilter::systems(DEFAULT_SYSTEMS)
    }
}

impl fmt::Debug for EventFilter {
    /// The enabled events as `set_event` lists them (`system:event`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set()
            .entries(
                self.events()
                    .map(|id| format!("{}:{}", id.system().name(), id.name())),
            )
            .finish()
    }
}

impl TraceEvent {
    /// Whether `filter` records this event.
    #[inline(always)]
    pub fn enabled_in(&self, filter: &EventFilter) -> bool {
        filter.enabled(self.id())
    }
}

/// The events one selector (without its `!`) names.
fn select(body: &str) -> Result<Vec<TraceEventId>, SelectorError> {
    if body.is_empty() {
        return Err(SelectorError("empty trace event selector".into()));
    }
    if body == "all" {
        return Ok(TraceEventId::all().collect());
    }
    let Some((sys, event)) = body.split_once(':') else {
        // `<name>`: all events of a system of that name, or any event of that name.
        let ids = matching(|e| e.system.name() == body || named(e.name, e.legacy_name, body));
        if ids.is_empty() {
            return Err(SelectorError(format!(
                "unknown trace system or event '{body}' (systems: {})",
                system_names()
            )));
        }
        return Ok(ids);
    };
    let sys = (!sys.is_empty() && sys != "*").then_some(sys);
    let event = (!event.is_empty() && event != "*").then_some(event);
    if let Some(s) = sys {
        if !TraceSystem::ALL.iter().any(|t| t.name() == s) {
            return Err(SelectorError(format!(
                "unknown trace system '{s}' in '{body}' (systems: {})",
                system_names()
            )));
        }
    }
    let ids = matching(|e| {
        sys.is_none_or(|s| e.system.name() == s)
            && event.is_none_or(|ev| named(e.name, e.legacy_name, ev))
    });
    if ids.is_empty() {
        let ev = event.unwrap_or("*");
        return Err(SelectorError(match sys {
            Some(s) => format!("unknown trace event '{ev}' in '{body}': {s} has no such event"),
            None => format!("unknown trace event '{ev}' in '{body}'"),
        }));
    }
    Ok(ids)
}

/// Whether an event called `name` (`legacy` before 2.6.36) is `wanted`.
fn named(name: &str, legacy: Option<&str>, wanted: &str) -> bool {
    name == wanted || legacy == Some(wanted)
}

/// The ids of the declared events `pred` accepts.
fn matching(pred: impl Fn(&super::TraceEventInfo) -> bool) -> Vec<TraceEventId> {
    TRACE_EVENTS
        .iter()
        .filter(|e| pred(e))
        .map(|e| e.id)
        .collect()
}

/// `vmscan, kmem, …` for error messages.
fn system_names() -> String {
    TraceSystem::ALL
        .iter()
        .map(|s| s.name())
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names (`system:event`) `lists` enables.
    fn names(lists: &[&str]) -> Vec<String> {
        let f = EventFilter::parse(lists).unwrap_or_else(|e| panic!("{lists:?}: {e}"));
        f.events()
            .map(|id| format!("{}:{}", id.system().name(), id.name()))
            .collect()
    }

    fn of_system(sys: TraceSystem) -> Vec<String> {
        TRACE_EVENTS
            .iter()
            .filter(|e| e.system == sys)
            .map(|e| format!("{}:{}", sys.name(), e.name))
            .collect()
    }

    fn err(list: &str) -> String {
        EventFilter::parse([list]).expect_err(list).to_string()
    }

    #[test]
    fn default_is_vmscan_compaction_writeback_and_no_kmem() {
        let f = EventFilter::default();
        for e in TRACE_EVENTS {
            assert_eq!(f.enabled(e.id), e.system != TraceSystem::Kmem, "{e:?}");
        }
        assert_eq!(
            f,
            EventFilter::parse(["vmscan,compaction,writeback"]).unwrap()
        );
        assert!(f.events().count() > 0);
    }

    #[test]
    fn a_whole_system() {
        let vmscan = of_system(TraceSystem::Vmscan);
        assert!(vmscan.len() > 1);
        for sel in ["vmscan", "vmscan:*", "vmscan:", " vmscan "] {
            assert_eq!(names(&[sel]), vmscan, "{sel}");
        }
        assert_eq!(names(&["kmem"]), of_system(TraceSystem::Kmem));
    }

    #[test]
    fn one_event() {
        for sel in [
            "kmem:mm_page_alloc",
            "mm_page_alloc",
            "*:mm_page_alloc",
            ":mm_page_alloc",
        ] {
            assert_eq!(names(&[sel]), ["kmem:mm_page_alloc"], "{sel}");
        }
        // The 2.6.35 name selects the event it became.
        assert_eq!(
            names(&["vmscan:mm_vmscan_writepage"]),
            ["vmscan:mm_vmscan_write_folio"]
        );
    }

    #[test]
    fn every_event() {
        for sel in ["*:*", "all", ":", "*:"] {
            assert_eq!(
                EventFilter::parse([sel]).unwrap(),
                EventFilter::all(),
                "{sel}"
            );
        }
        assert_eq!(EventFilter::all().events().count(), NR_TRACE_EVENTS);
        assert_eq!(EventFilter::none().events().count(), 0);
        assert_eq!(
            EventFilter::parse::<_, &str>([]).unwrap(),
            EventFilter::none()
        );
    }

    #[test]
    fn lists_accumulate_and_bang_disables() {
        assert_eq!(
            EventFilter::parse(["vmscan", "kmem:mm_page_free"]).unwrap(),
            EventFilter::parse(["vmscan,kmem:mm_page_free"]).unwrap()
        );
        let mut want = of_system(TraceSystem::Vmscan);
        want.retain(|n| n != "vmscan:mm_vmscan_lru_isolate");
        assert_eq!(names(&["vmscan,!vmscan:mm_vmscan_lru_isolate"]), want);
        assert_eq!(
            names(&["all,!vmscan,!compaction,!writeback"]),
            of_system(TraceSystem::Kmem)
        );
        // Later selectors win, as successive writes to set_event do.
        assert_eq!(
            names(&["!kmem:mm_page_free,kmem:mm_page_free"]),
            ["kmem:mm_page_free"]
        );
    }

    #[test]
    fn unknown_names_are_errors_naming_them() {
        let e = err("vmscn");
        assert!(e.contains("'vmscn'") && e.contains("vmscan, kmem"), "{e}");
        let e = err("vmscn:*");
        assert!(e.contains("unknown trace system 'vmscn'"), "{e}");
        let e = err("kmem:mm_page_allok");
        assert!(e.contains("'mm_page_allok'") && e.contains("kmem"), "{e}");
        // An event of another system is not in this one.
        let e = err("kmem:mm_vmscan_kswapd_wake");
        assert!(e.contains("'mm_vmscan_kswapd_wake'"), "{e}");
        let e = err("*:nosuch");
        assert!(e.contains("'nosuch'"), "{e}");
        assert!(err("vmscan,,kmem").contains("empty"));
        assert!(err("!").contains("empty"));
        // `*` alone is no name, as in set_event; `*:*` and `all` are every event.
        assert!(err("*").contains("'*'"));
        // One line each.
        for bad in ["vmscn", "kmem:x", "x:y", ""] {
            assert!(!err(bad).contains('\n'));
        }
    }

    #[test]
    fn debug_lists_the_enabled_events() {
        let f = EventFilter::parse(["kmem:mm_page_free,compaction:mm_compaction_end"]).unwrap();
        assert_eq!(
            format!("{f:?}"),
            r#"{"kmem:mm_page_free", "compaction:mm_compaction_end"}"#
        );
    }
}
