//! vmsim-core: a discrete-event simulator of Linux kernel memory management.
//!
//! The engine ([`engine`]) runs simulated tasks ([`workload`]) on simulated
//! CPUs against a simulated kernel ([`kernel`], [`mm`]): the buddy allocator
//! with mobility grouping, watermarks, per-CPU lists, slab caches, reclaim
//! and the OOM killer, each in a module named after the kernel file it
//! models. A scenario ([`config::Scenario`]) describes machine, kernel and
//! workload; [`sim::run`] returns what /proc and the tracepoints would show.
//! Same scenario and seed, same bytes.

#![warn(missing_docs)]

pub mod bench;
pub mod block;
pub mod capacity;
pub mod config;
pub mod costs;
pub mod engine;
pub mod error;
pub mod fs;
pub mod kernel;
pub mod mm;
pub mod net;
pub mod replay;
pub mod sim;
pub mod trace;
pub mod units;
pub mod workload;

pub use config::Scenario;
pub use error::{Error, Result};
pub use sim::{run, RunResult};

/// Parses a scenario, optionally overriding its seed, and runs it if this host can hold it
/// ([`capacity::check`]); a run that outgrows the host stops with [`Error::Capacity`].
pub fn run_toml(
    text: &str,
    seed: Option<u64>,
    progress: &mut dyn FnMut(u64, u64),
) -> Result<RunResult> {
    let mut sc = Scenario::from_toml(text)?;
    if let Some(s) = seed {
        sc.seed = s;
    }
    let budget = capacity::check(&sc)?;
    let mut ctl = sim::Control::new(progress);
    ctl.budget = budget;
    match sim::run_controlled(&sc, None, &mut ctl) {
        Ok((r, _)) => Ok(r),
        Err(e @ sim::Stopped::HostMemory { .. }) => Err(Error::Capacity(e.to_string())),
        Err(e) => unreachable!("a run without interruption stops only at a check: {e}"),
    }
}
