//! Tracepoint events rendered as ftrace text, as a 6.18 kernel prints them.
//!
//! The engine describes what happened as a [`TraceEvent`] (one variant per
//! vmscan, kmem, compaction and writeback tracepoint, with the fields of the
//! kernel's format file); [`render`] prints its details exactly as the
//! event's print fmt does, and a [`Tracer`] collects whole lines of the
//! enabled events ([`EventFilter`], as `set_event` selects them) and writes
//! them out as `/sys/kernel/tracing/trace` would, header included.
//!
//! Each tracepoint is declared once (event.rs; the `tracepoints!` macro of
//! tracepoint.rs): its name, system, fields, 6.18 print fmt and 2.6.35 form.
//! [`TRACE_EVENTS`] lists them all, indexed by [`TraceEventId`].
//!
//! Two output formats ([`TraceFormat`]):
//!
//! - [`TraceFormat::Modern`]: byte-compatible with a real Linux 6.18 trace
//!   buffer (KERNEL-FORMATS.md §2), except that `%p` hashes come from a fixed
//!   mixer rather than the kernel's boot-time siphash key.
//! - [`TraceFormat::Legacy`]: the vmscan events in the 2.6.35-era formats
//!   that Documentation/trace/postprocess/trace-vmscan-postprocess.pl's
//!   default regexes expect (§3.1); see [`render`] for exactly what changes.
//!
//! Emitting from engine code:
//!
//! ```
//! use vmsim_core::mm::gfp::GFP_HIGHUSER_MOVABLE;
//! use vmsim_core::trace::{TraceEvent, TraceFormat, Tracer};
//! let mut tracer = Tracer::new(TraceFormat::Modern, 2);
//! tracer.emit(
//!     199_778_439_000, // ns since boot
//!     0,               // cpu
//!     "dd",
//!     4454,
//!     &TraceEvent::MmVmscanMemcgReclaimBegin {
//!         order: 0,
//!         gfp_flags: GFP_HIGHUSER_MOVABLE.0,
//!         may_writepage: 1,
//!     },
//! );
//! assert_eq!(
//!     tracer.lines()[0],
//!     "              dd-4454    [000] .....   199.778439: \
//!      mm_vmscan_memcg_reclaim_begin: order=0 gfp_flags=GFP_HIGHUSER_MOVABLE"
//! );
//! ```
//!
//! kmem's page events are off unless selected; code on a hot path asks before
//! it builds the event:
//!
//! ```
//! use vmsim_core::trace::{EventFilter, TraceEvent, TraceEventId, TraceFormat, Tracer};
//! let mut tracer = Tracer::new(TraceFormat::Modern, 2);
//! assert!(!tracer.enabled(TraceEventId::MmPageFree));
//! tracer.set_events(EventFilter::parse(["vmscan", "kmem:mm_page_free"]).unwrap());
//! if tracer.enabled(TraceEventId::MmPageFree) {
//!     tracer.emit(1_000, 0, "dd", 4454, &TraceEvent::MmPageFree { pfn: 0x12e9f2, order: 0 });
//! }
//! assert_eq!(tracer.len(), 1);
//! assert!(tracer.lines()[0].ends_with(" pfn=0x12e9f2 order=0"));
//! ```

mod event;
mod filter;
mod flags;
mod format;
mod tracepoint;
mod tracer;

#[cfg(test)]
mod tests;

pub use event::*;
pub use filter::{EventFilter, SelectorError, DEFAULT_SYSTEMS};
pub use flags::{
    gfp_to_kernel, parse_gfp_flags, print_flags, print_symbolic, show_gfp_flags,
    show_reclaim_flags, show_throttle_flags, COMPACTION_STATUS_TABLE, KERNEL_GFP_TABLE, LRU_TABLE,
    RECLAIM_FLAGS_TABLE, THROTTLE_TABLE, WB_REASON_TABLE, ZONE_TABLE,
};
pub use format::{
    event_name, hashed_ptr, page_address, render, PAGEBLOCK_ORDER, STRUCT_PAGE_SIZE, VMEMMAP_BASE,
};
pub use tracepoint::{LegacyForm, TraceEventInfo};
pub use tracer::{
    default_flags, format_line, header, header_written, LineFlags, Tracer, MAX_TRACE_EVENTS,
};

/// Which kernel's text formats to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TraceFormat {
    /// The formats of a Linux 6.18 kernel (what perf, trace-cmd,
    /// libtraceevent and format-file-driven tools parse).
    #[default]
    Modern,
    /// The 2.6.35-era vmscan formats trace-vmscan-postprocess.pl's default
    /// regexes expect (`mm_vmscan_writepage`, `may_writepage=`, `contig_*`,
    /// `zid=`).
    Legacy,
}
