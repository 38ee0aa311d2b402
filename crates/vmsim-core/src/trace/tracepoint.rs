//! The `tracepoints!` macro: every tracepoint declared once.
//!
//! The kernel declares an event once in `include/trace/events/<sys>.h`
//! (`TRACE_EVENT()`, or a `DECLARE_EVENT_CLASS()` shared by several
//! `DEFINE_EVENT()`s): its name, its fields (`TP_STRUCT__entry`) and its print
//! fmt (`TP_printk`); the tracing core generates the rest. `tracepoints!` does
//! the same for vmsim: from one declaration per event (or per class of events
//! that share fields and formats) it generates
//!
//! - the [`TraceEvent`](super::TraceEvent) variant with its fields,
//! - [`TraceEventId`](super::TraceEventId), a dense numeric id
//!   (`TraceEvent::id()`), in declaration order,
//! - [`TraceSystem`](super::TraceSystem) and the event's system,
//! - the event's name (and its 2.6.35 name where it differed),
//! - the modern (6.18) and legacy (2.6.35) renderings,
//! - the line flags the kernel shows at the event's usual call site,
//! - [`TRACE_EVENTS`](super::TRACE_EVENTS), the table of every event.
//!
//! The declarations are in `event.rs`. Grammar (`…` repeats):
//!
//! ```text
//! /// doc of the system
//! system vmscan => Vmscan {
//!     /// doc of the event
//!     event_name => VariantName [legacy_name = old_name] [flags = LINE_FLAGS],
//!     …                                  (several events sharing one class)
//!     fields { field: type, … }          (the format file's fields)
//!     printk("fmt", args…)               (format! of the 6.18 print fmt)
//!     legacy same | legacy none | legacy("fmt", args…);
//!     …
//! }
//! ```
//!
//! `printk` and `legacy` see every field by name (by value). `legacy same`:
//! 2.6.35 printed the event as 6.18 does (or the postprocess script ignores
//! it); `legacy none`: old kernels lacked the event, the legacy trace drops
//! it. `[flags = …]` is an expression over the fields (default `.....`,
//! [`LineFlags::NONE`](super::LineFlags::NONE)).

/// What the legacy (2.6.35-era) format does with an event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LegacyForm {
    /// Printed as the 6.18 print fmt prints it.
    Same,
    /// Printed in its own 2.6.35-era format.
    Own,
    /// Old kernels lacked the event: a legacy trace drops it.
    Absent,
}

/// One row of [`TRACE_EVENTS`](super::TRACE_EVENTS): a declared tracepoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TraceEventInfo {
    /// Its id (its index in the table).
    pub id: super::TraceEventId,
    /// Its subsystem (`events/<sys>/`).
    pub system: super::TraceSystem,
    /// Its 6.18 name (`events/<sys>/<name>/`).
    pub name: &'static str,
    /// Its 2.6.35 name, where it differed.
    pub legacy_name: Option<&'static str>,
    /// What the legacy format prints.
    pub legacy: LegacyForm,
}

/// Declares the tracepoints; see the module docs for the grammar.
macro_rules! tracepoints {
    // Entry: systems of declarations, each declaration one or more events.
    // Flattened into one `{ … }` group per event for `@gen`.
    (
        $(
            $(#[$sdoc:meta])*
            system $sys:ident => $Sys:ident {
                $(
                    $(
                        $(#[$doc:meta])*
                        $name:ident => $V:ident
                        $([legacy_name = $lname:ident])?
                        $([flags = $fl:expr])?
                    ),+
                    fields $fields:tt
                    printk $printk:tt
                    legacy $legacy:tt
                    ;
                )+
            }
        )+
    ) => {
        tracepoints!(@gen
            [ $( [$(#[$sdoc])*] $sys $Sys )+ ]
            $( $( $(
                {
                    $sys $Sys [$(#[$doc])*] $name $V [$($lname)?] [$($fl)?]
                    $fields $printk $legacy
                }
            )+ )+ )+
        );
    };

    (@gen
        [ $( [$(#[$sdoc:meta])*] $ssys:ident $SSys:ident )+ ]
        $(
            {
                $sys:ident $Sys:ident [$(#[$doc:meta])*] $name:ident $V:ident
                [$($lname:ident)?] [$($fl:expr)?]
                { $($f:ident : $t:ty),* $(,)? }
                ( $($fmt:tt)+ )
                $legacy:tt
            }
        )+
    ) => {
        /// A simulated tracepoint hit. See the module docs for field conventions.
        #[allow(missing_docs)] // fields carry the kernel's names; see the format files
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub enum TraceEvent {
            $(
                #[doc = concat!("`", stringify!($sys), "/", stringify!($name), "`.")]
                #[doc = ""]
                $(#[$doc])*
                $V { $($f: $t),* },
            )+
        }

        /// The tracing subsystem an event belongs to (its `events/<sys>/` directory).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum TraceSystem {
            $( $(#[$sdoc])* $SSys, )+
        }

        impl TraceSystem {
            /// Every system, in declaration order.
            pub const ALL: &'static [TraceSystem] = &[$(TraceSystem::$SSys),+];

            /// The system's name (`events/<sys>/`).
            pub const fn name(self) -> &'static str {
                match self {
                    $(TraceSystem::$SSys => stringify!($ssys),)+
                }
            }
        }

        /// A tracepoint's id: its index in [`TRACE_EVENTS`], dense from 0 in
        /// declaration order (the kernel's `events/<sys>/<event>/id`).
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[repr(u16)]
        pub enum TraceEventId {
            $(
                #[doc = concat!("`", stringify!($sys), ":", stringify!($name), "`.")]
                $V,
            )+
        }

        /// Every declared tracepoint, indexed by [`TraceEventId`].
        pub const TRACE_EVENTS: &[$crate::trace::TraceEventInfo] = &[
            $(
                $crate::trace::TraceEventInfo {
                    id: TraceEventId::$V,
                    system: TraceSystem::$Sys,
                    name: stringify!($name),
                    legacy_name: tracepoints!(@opt_name $($lname)?),
                    legacy: tracepoints!(@legacy_form $legacy),
                },
            )+
        ];

        impl TraceEvent {
            /// This event's id.
            #[inline]
            pub const fn id(&self) -> TraceEventId {
                match self {
                    $(TraceEvent::$V { .. } => TraceEventId::$V,)+
                }
            }

            /// The flags the real kernel shows for this event at its usual call
            /// site (see [`default_flags`](super::default_flags)).
            pub fn default_flags(&self) -> $crate::trace::LineFlags {
                match *self {
                    $(
                        #[allow(unused_variables)]
                        TraceEvent::$V { $($f),* } => tracepoints!(@flags $($fl)?),
                    )+
                }
            }

            /// The details text as the 6.18 print fmt prints it.
            pub(super) fn render_modern(&self) -> String {
                let mut s = String::with_capacity(160);
                match *self {
                    $(
                        #[allow(unused_variables)]
                        TraceEvent::$V { $($f),* } => {
                            // Writing to a String cannot fail.
                            let _ = ::std::fmt::Write::write_fmt(&mut s, format_args!($($fmt)+));
                        }
                    )+
                }
                s
            }

            /// An event `id` with every field zero (tests iterate the table with it).
            #[cfg(test)]
            pub(crate) fn zeroed(id: TraceEventId) -> TraceEvent {
                match id {
                    $(TraceEventId::$V => TraceEvent::$V { $($f: Default::default()),* },)+
                }
            }

            /// The details text in the 2.6.35-era format (`None`: old kernels
            /// lacked the event).
            pub(super) fn render_legacy(&self) -> Option<String> {
                match *self {
                    $(
                        #[allow(unused_variables)]
                        TraceEvent::$V { $($f),* } => tracepoints!(@legacy self, $legacy),
                    )+
                }
            }
        }
    };

    (@opt_name) => { None };
    (@opt_name $lname:ident) => { Some(stringify!($lname)) };

    (@legacy_form same) => { $crate::trace::LegacyForm::Same };
    (@legacy_form none) => { $crate::trace::LegacyForm::Absent };
    (@legacy_form ( $($fmt:tt)+ )) => { $crate::trace::LegacyForm::Own };

    (@flags) => { $crate::trace::LineFlags::NONE };
    (@flags $fl:expr) => { $fl };

    (@legacy $ev:expr, same) => { Some($ev.render_modern()) };
    (@legacy $ev:expr, none) => { None };
    (@legacy $ev:expr, ( $($fmt:tt)+ )) => {{
        let mut s = String::with_capacity(160);
        // Writing to a String cannot fail.
        let _ = ::std::fmt::Write::write_fmt(&mut s, format_args!($($fmt)+));
        Some(s)
    }};
}

pub(super) use tracepoints;
