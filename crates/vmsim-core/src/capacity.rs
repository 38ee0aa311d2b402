//! Host memory a run needs, checked before anything is allocated.
//!
//! A scenario describes a machine that may be far larger than the host that
//! simulates it; the engine keeps a small record per simulated frame and per
//! swap slot, a page-table slot per mapped page, a record per task and per
//! memory cgroup, and every sample of the time series. [`need`] adds these
//! up from a validated scenario; [`check`] compares the sum with what the
//! host can give (MemAvailable of /proc/meminfo, the room left under
//! RLIMIT_AS, and under the memory cgroup's memory.max) and refuses a run
//! that cannot fit with one line, before the frame table is allocated.
//!
//! Trace buffers are not counted: they grow with the events a run emits,
//! which the scenario does not bound.

use crate::config::Scenario;
use crate::error::{Error, Result};
use crate::mm::page::{Page, PAGE_SIZE};

/// Bytes of the frame table per simulated 4 KiB frame: the `Page` record (`vmsim bench`'s
/// `bytes_per_frame`; the pageblock arrays add 3 bytes per 512 frames, left out) [bytes].
pub const BYTES_PER_FRAME: u64 = std::mem::size_of::<Page>() as u64;
/// swap_map's use count and the swap cache's frame per swap slot (`SwapInfo`) [bytes].
pub const BYTES_PER_SWAP_SLOT: u64 = 1 + std::mem::size_of::<crate::mm::page::Pfn>() as u64;
/// A page-table slot (the reverse map's slot space) per mapped page; at most every frame
/// and every swap slot is mapped [bytes].
pub const BYTES_PER_MAPPED_PAGE: u64 = 4;
/// One user task: the engine's task, its program, its mm and its share of the result
/// (the peak resident set grows by 1,013–1,039 bytes a task from 1 to 20,001 sleeping
/// tasks, measured on 28 November 2026, the builds of the two stops before too; 823 when
/// this was first measured; half as much again is allowed for the allocator's slack) [bytes].
pub const BYTES_PER_TASK: u64 = 1536;
/// One memory cgroup: its counters and lruvecs (152 bytes a group from 2 to 20,002
/// generated v2 groups, measured like [`BYTES_PER_TASK`]) [bytes].
pub const BYTES_PER_MEMCG: u64 = 256;
/// One sample of the time series: the engine's arrays, the result's JSON text and the
/// Python objects it becomes (966 bytes a sample from 1,000 to 101,000 samples, measured
/// like [`BYTES_PER_TASK`]; half as much again is allowed for the allocator's slack) [bytes].
pub const BYTES_PER_SAMPLE: u64 = 1536;

/// The host memory one run needs, by what needs it [bytes].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize)]
pub struct Need {
    /// The frame table (`machine.memory`).
    pub frame_table: u64,
    /// The swap map and swap cache (`machine.swap`).
    pub swap: u64,
    /// Page tables of the tasks: one slot per frame and per swap slot at most.
    pub page_tables: u64,
    /// The user tasks of every workload table.
    pub tasks: u64,
    /// The memory cgroups, generated ones included.
    pub memcgs: u64,
    /// The time series (`duration` / `sampling.interval` samples).
    pub samples: u64,
}

impl Need {
    /// All of it [bytes].
    pub fn total(&self) -> u64 {
        [
            self.frame_table,
            self.swap,
            self.page_tables,
            self.tasks,
            self.memcgs,
            self.samples,
        ]
        .iter()
        .fold(0u64, |a, &b| a.saturating_add(b))
    }
}

/// What the host can give a run, and what sets that figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimit {
    /// Bytes the run may still take.
    pub bytes: u64,
    /// What limits it: `available` (MemAvailable), `left under RLIMIT_AS`, `left under memory.max`.
    pub what: &'static str,
}

/// The host memory a scenario's run needs; `sc` must be validated (its counts are bounded).
pub fn need(sc: &Scenario) -> Need {
    let frames = sc.machine.memory.0 / PAGE_SIZE;
    let slots = sc.machine.swap.0 / PAGE_SIZE;
    let samples = sc.duration.0 / sc.sampling.interval.0.max(1) + 1;
    Need {
        frame_table: frames.saturating_mul(BYTES_PER_FRAME),
        swap: slots.saturating_mul(BYTES_PER_SWAP_SLOT),
        page_tables: frames
            .saturating_add(slots)
            .saturating_mul(BYTES_PER_MAPPED_PAGE),
        tasks: sc.user_tasks().saturating_mul(BYTES_PER_TASK),
        memcgs: sc.memcg_count().saturating_mul(BYTES_PER_MEMCG),
        samples: samples.saturating_mul(BYTES_PER_SAMPLE),
    }
}

/// The tightest of MemAvailable, the room under RLIMIT_AS and under the cgroup's memory.max;
/// None when none can be read (not Linux).
pub fn host_limit() -> Option<HostLimit> {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let vm_size = proc_kib(&status, "VmSize:").unwrap_or(0);
    let rss = proc_kib(&status, "VmRSS:").unwrap_or(0);
    let mut best: Option<HostLimit> = None;
    let mut consider = |bytes: Option<u64>, what: &'static str| {
        if let Some(b) = bytes {
            if best.is_none_or(|l| b < l.bytes) {
                best = Some(HostLimit { bytes: b, what });
            }
        }
    };
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    consider(proc_kib(&meminfo, "MemAvailable:"), "available");
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    consider(
        rlimit_as(&limits).map(|l| l.saturating_sub(vm_size)),
        "left under RLIMIT_AS",
    );
    consider(
        cgroup_memory_max().map(|(max, cur)| max.saturating_sub(cur.max(rss))),
        "left under its memory cgroup's memory.max",
    );
    best
}

/// A `Key:   N kB` line of a /proc file, in bytes.
fn proc_kib(text: &str, key: &str) -> Option<u64> {
    let line = text.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line[key.len()..].split_whitespace().next()?.parse().ok()?;
    Some(kib.saturating_mul(1024))
}

/// The soft RLIMIT_AS of /proc/self/limits (`Max address space`), None when unlimited.
fn rlimit_as(limits: &str) -> Option<u64> {
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    line["Max address space".len()..]
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// memory.max and memory.current of this process's cgroup v2, when it has a limit.
fn cgroup_memory_max() -> Option<(u64, u64)> {
    let cg = std::fs::read_to_string("/proc/self/cgroup").ok()?;
    let path = cg.lines().find_map(|l| l.strip_prefix("0::"))?;
    let dir = std::path::Path::new("/sys/fs/cgroup").join(path.trim_start_matches('/'));
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).ok();
    let max: u64 = read("memory.max")?.trim().parse().ok()?;
    let cur: u64 = read("memory.current")?.trim().parse().ok()?;
    Some((max, cur))
}

/// Bytes as decimal gigabytes with one decimal (`68.7 GB`), or megabytes below 1 GB.
pub fn human(bytes: u64) -> String {
    if bytes >= 1_000_000_000 {
        format!("{:.1} GB", bytes as f64 / 1e9)
    } else {
        format!("{:.1} MB", bytes as f64 / 1e6)
    }
}

/// The largest part of a need, named by the scenario keys that set it.
fn largest_part(sc: &Scenario, n: &Need) -> String {
    let m = &sc.machine;
    let samples = sc.duration.0 / sc.sampling.interval.0.max(1) + 1;
    let parts = [
        (
            n.frame_table,
            format!("machine.memory = {} needs", m.memory),
            "for its frame table",
        ),
        (
            n.swap,
            format!("machine.swap = {} needs", m.swap),
            "for its swap map",
        ),
        (
            n.page_tables,
            format!(
                "machine.memory = {} and machine.swap = {} need",
                m.memory, m.swap
            ),
            "for page tables",
        ),
        (
            n.tasks,
            format!("{} tasks need", sc.user_tasks()),
            "for their task records",
        ),
        (
            n.memcgs,
            format!("{} cgroups need", sc.memcg_count()),
            "for their records",
        ),
        (
            n.samples,
            format!(
                "duration = {} sampled every {} ({samples} samples) needs",
                sc.duration, sc.sampling.interval
            ),
            "for its time series",
        ),
    ];
    let (bytes, who, what) = parts.iter().max_by_key(|p| p.0).expect("six parts");
    format!("{who} {} of host memory {what}", human(*bytes))
}

/// Refuses a run whose need exceeds `limit`: one line naming the need and the limit.
pub fn check_against(sc: &Scenario, limit: Option<HostLimit>) -> Result<()> {
    let Some(limit) = limit else { return Ok(()) };
    let n = need(sc);
    let total = n.total();
    if total <= limit.bytes {
        return Ok(());
    }
    Err(Error::Capacity(format!(
        "{} ({} in all); this host has {} {}",
        largest_part(sc, &n),
        human(total),
        human(limit.bytes),
        limit.what
    )))
}

/// Refuses a run this host cannot hold ([`check_against`] with [`host_limit`]).
pub fn check(sc: &Scenario) -> Result<()> {
    check_against(sc, host_limit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(text: &str) -> Scenario {
        Scenario::from_toml(text).unwrap()
    }

    #[test]
    fn frame_table_is_16_bytes_a_frame() {
        // DESIGN.md's target and `vmsim bench`'s bytes_per_frame.
        assert_eq!(BYTES_PER_FRAME, 16);
        let n = need(&sc("[machine]\nmemory = \"8TiB\"\nswap = \"4TiB\"\n"));
        assert_eq!(n.frame_table, (8u64 << 40) / 4096 * 16);
        assert_eq!(n.swap, (4u64 << 40) / 4096 * 5);
        assert_eq!(n.page_tables, (12u64 << 40) / 4096 * 4);
        assert_eq!(human(n.frame_table), "34.4 GB");
    }

    #[test]
    fn tasks_memcgs_and_samples_are_counted() {
        let text = "duration = \"100s\"\n[sampling]\ninterval = \"1ms\"\n\
                    [[task]]\nname = \"a\"\ncount = 1000\nprogram = []\n\
                    [[cgroup]]\npath = \"A\"\ngenerate = { shape = \"flat\", groups = 9 }\n";
        let n = need(&sc(text));
        assert_eq!(n.tasks, 1000 * BYTES_PER_TASK);
        assert_eq!(n.memcgs, 10 * BYTES_PER_MEMCG);
        assert_eq!(n.samples, 100_001 * BYTES_PER_SAMPLE);
        assert_eq!(
            n.total(),
            n.frame_table + n.swap + n.page_tables + n.tasks + n.memcgs + n.samples
        );
    }

    #[test]
    fn a_machine_larger_than_the_host_is_one_line() {
        let s = sc("[machine]\nmemory = \"8TiB\"\nswap = \"4TiB\"\n");
        let limit = HostLimit {
            bytes: 22_100_000_000,
            what: "available",
        };
        let e = check_against(&s, Some(limit)).unwrap_err().to_string();
        assert!(
            e.starts_with("machine.memory = 8TiB needs 34.4 GB of host memory for its frame table"),
            "{e}"
        );
        assert!(e.ends_with("this host has 22.1 GB available"), "{e}");
        assert!(!e.contains('\n'));
        assert!(check_against(&sc(""), Some(limit)).is_ok());
        assert!(check_against(&s, None).is_ok());
    }

    #[test]
    fn samples_name_their_keys() {
        let s = sc(
            "duration = \"199s\"\n[sampling]\ninterval = \"1ms\"\n[machine]\nmemory=\"64MiB\"\n",
        );
        let limit = HostLimit {
            bytes: 100 << 20,
            what: "available",
        };
        let e = check_against(&s, Some(limit)).unwrap_err().to_string();
        assert!(
            e.contains("duration = 199s sampled every 1ms (199001 samples)"),
            "{e}"
        );
    }

    #[test]
    fn proc_files_are_read() {
        assert_eq!(
            proc_kib("MemAvailable:   1000 kB\n", "MemAvailable:"),
            Some(1_024_000)
        );
        let l = "Max address space         unlimited            unlimited            bytes\n";
        assert_eq!(rlimit_as(l), None);
        let l = "Max address space         4096            unlimited            bytes\n";
        assert_eq!(rlimit_as(l), Some(4096));
    }
}
