//! Host memory a run needs, checked before anything is allocated and watched as it grows.
//!
//! A scenario describes a machine that may be far larger than the host that
//! simulates it; the engine keeps a small record per simulated frame and per
//! swap slot, a page-table slot per mapped page, a record per task and per
//! memory cgroup, and every sample of the time series. [`need`] adds these
//! up from a validated scenario. Part of it is written when the run starts
//! ([`Need::at_start`]: the frames boot writes, the swap map, tasks, cgroups,
//! samples); the rest grows with the memory the run uses: the frame table is
//! one address-space reservation (mm/memmap.rs) whose host pages are written
//! as free blocks are first used (mm/deferred.rs), and page tables grow with
//! what tasks map. [`check`] refuses, with one line and before the frame table
//! is allocated, a run whose start the host cannot hold (MemAvailable of
//! /proc/meminfo, or the room under the memory cgroup's memory.max) or whose
//! frame table does not fit the address space left under RLIMIT_AS; when the
//! run could outgrow the host it returns a [`Budget`], and the run stops with
//! one line when what it has grown reaches it ([`crate::sim::Stopped::HostMemory`]).
//!
//! Trace buffers are not counted: they grow with the events a run emits,
//! which the scenario does not bound.

use crate::config::Scenario;
use crate::error::{Error, Result};
use crate::mm::page::{Page, PAGE_SIZE};

/// Bytes of the frame table per simulated 4 KiB frame: the `Page` record (`vmsim bench`'s
/// `bytes_per_frame`; the pageblock arrays add 3 bytes per 512 frames, left out) [bytes].
pub const BYTES_PER_FRAME: u64 = std::mem::size_of::<Page>() as u64;
/// Per swap slot, what `SwapInfo` allocates at once: swap_map's use count (u8), the swap
/// cache's frame (a page link, `pfn32`), the owner's slot and the memcg charged (three
/// u32) [bytes].
pub const BYTES_PER_SWAP_SLOT: u64 = 1 + 3 * std::mem::size_of::<u32>() as u64;
/// The pageblock arrays, written at boot: its migratetype (u8) and zone (u16) [bytes].
pub const BYTES_PER_PAGEBLOCK: u64 = 3;
/// A page-table slot (the reverse map's slot space, 64 bits: a frame or a swap entry)
/// per mapped page; at most every frame and every swap slot is mapped [bytes].
pub const BYTES_PER_MAPPED_PAGE: u64 = 8;
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
    /// The frame table (`machine.memory`) once every frame is used: its address space.
    pub frame_table: u64,
    /// The part of it boot writes (reserved ranges, the frames of free chunks smaller
    /// than a MAX_PAGE_ORDER block, the pageblock arrays).
    pub frame_table_boot: u64,
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
    /// What is written before the first event: boot's frames, the swap map, the tasks,
    /// cgroups and samples [bytes].
    pub fn at_start(&self) -> u64 {
        saturating_sum(&[
            self.frame_table_boot,
            self.swap,
            self.tasks,
            self.memcgs,
            self.samples,
        ])
    }

    /// Address space the run takes at its start: the whole frame table and the rest of
    /// what is written then [bytes].
    pub fn address_space(&self) -> u64 {
        self.at_start()
            .saturating_sub(self.frame_table_boot)
            .saturating_add(self.frame_table)
    }

    /// All of it: every frame used and every frame and swap slot mapped [bytes].
    pub fn total(&self) -> u64 {
        saturating_sum(&[
            self.frame_table,
            self.swap,
            self.page_tables,
            self.tasks,
            self.memcgs,
            self.samples,
        ])
    }
}

/// The sum of `parts`, at most u64::MAX.
fn saturating_sum(parts: &[u64]) -> u64 {
    parts.iter().fold(0u64, |a, &b| a.saturating_add(b))
}

/// What the host can give a run, and what sets that figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostLimit {
    /// Bytes the run may still take.
    pub bytes: u64,
    /// What limits it: `available` (MemAvailable), `left under RLIMIT_AS`, `left under memory.max`.
    pub what: &'static str,
}

/// Frames boot writes on a machine, at most: the partial MAX_PAGE_ORDER blocks at the ends
/// of memblock's reserved ranges and of every free range cut at zone boundaries (whole
/// blocks, free or reserved, are written when first used or read: mm/deferred.rs).
pub fn boot_written_frames(m: &crate::config::Machine) -> u64 {
    let reserved = crate::mm::mm_init::memblock_reserved(m).len() as u64;
    let zones = crate::mm::mmzone::MAX_NR_ZONES as u64 * m.nodes as u64;
    let pieces = 2 * reserved + 1 + zones;
    (pieces * 2 * (1 << crate::mm::mmzone::MAX_PAGE_ORDER)).min(crate::mm::mm_init::nr_frames(m))
}

/// Frames boot writes when it shuffles the free lists (`kernel.shuffle_page_alloc`,
/// `machine.mixed_free_lists`: `Mm::shuffle_free_memory` writes every free block first):
/// every frame but the MAX_PAGE_ORDER blocks memblock reserves whole.
pub fn shuffled_boot_frames(m: &crate::config::Machine) -> u64 {
    let block = 1u64 << crate::mm::mmzone::MAX_PAGE_ORDER;
    let whole_reserved: u64 = crate::mm::mm_init::memblock_reserved(m)
        .iter()
        .map(|&(s, e)| (e / block).saturating_sub(s.div_ceil(block)) * block)
        .sum();
    crate::mm::mm_init::nr_frames(m).saturating_sub(whole_reserved)
}

/// The host memory a scenario's run needs; `sc` must be validated (its counts are bounded).
pub fn need(sc: &Scenario) -> Need {
    let frames = sc.machine.memory.0 / PAGE_SIZE;
    let slots = sc.machine.swap.0 / PAGE_SIZE;
    let samples = sc.duration.0 / sc.sampling.interval.0.max(1) + 1;
    let pageblocks = frames >> crate::mm::mmzone::PAGEBLOCK_ORDER;
    Need {
        frame_table: frames.saturating_mul(BYTES_PER_FRAME),
        frame_table_boot: if sc.kernel.shuffle_page_alloc || sc.machine.mixed_free_lists {
            shuffled_boot_frames(&sc.machine)
        } else {
            boot_written_frames(&sc.machine)
        }
        .saturating_mul(BYTES_PER_FRAME)
        .saturating_add(pageblocks * BYTES_PER_PAGEBLOCK),
        swap: slots.saturating_mul(BYTES_PER_SWAP_SLOT),
        page_tables: frames
            .saturating_add(slots)
            .saturating_mul(BYTES_PER_MAPPED_PAGE),
        tasks: sc.user_tasks().saturating_mul(BYTES_PER_TASK),
        memcgs: sc.memcg_count().saturating_mul(BYTES_PER_MEMCG),
        samples: samples.saturating_mul(BYTES_PER_SAMPLE),
    }
}

/// What limits a run on this host: the memory it may write and the address space it may take.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HostLimits {
    /// The tighter of MemAvailable and the room under the cgroup's memory.max.
    pub resident: Option<HostLimit>,
    /// The room left under RLIMIT_AS.
    pub address: Option<HostLimit>,
}

/// This host's limits; None where they cannot be read (not Linux) or are unlimited.
pub fn host_limits() -> HostLimits {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let vm_size = proc_kib(&status, "VmSize:").unwrap_or(0);
    let rss = proc_kib(&status, "VmRSS:").unwrap_or(0);
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let available = proc_kib(&meminfo, "MemAvailable:").map(|bytes| HostLimit {
        bytes,
        what: "available",
    });
    let cgroup = cgroup_memory_max().map(|(max, cur)| HostLimit {
        bytes: max.saturating_sub(cur.max(rss)),
        what: "left under its memory cgroup's memory.max",
    });
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    HostLimits {
        resident: [available, cgroup]
            .into_iter()
            .flatten()
            .min_by_key(|l| l.bytes),
        address: rlimit_as(&limits).map(|l| HostLimit {
            bytes: l.saturating_sub(vm_size),
            what: "left under RLIMIT_AS",
        }),
    }
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
            n.frame_table_boot,
            format!("machine.memory = {} needs", m.memory),
            "for the frame table boot writes",
        ),
        (
            n.swap,
            format!("machine.swap = {} needs", m.swap),
            "for its swap map",
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
    let (bytes, who, what) = parts.iter().max_by_key(|p| p.0).expect("five parts");
    format!("{who} {} of host memory {what}", human(*bytes))
}

/// What a run may grow by after its start, when it could outgrow the host: the run stops
/// with one line if its frame table and page tables grow past it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Budget {
    /// The host's limit at the start.
    pub limit: HostLimit,
    /// What the start took ([`Need::at_start`]).
    pub at_start: u64,
    /// `machine.memory` as the scenario wrote it.
    pub memory: String,
}

impl Budget {
    /// Bytes the run may write beyond its start.
    pub fn bytes(&self) -> u64 {
        self.limit.bytes.saturating_sub(self.at_start)
    }

    /// The line that stops a run which grew by `grown` bytes at simulated time `at_ns`.
    pub fn exceeded(&self, at_ns: u64, grown: u64) -> String {
        format!(
            "at simulated time {:.3} s the run's frame table and page tables had grown by {} \
             of host memory beyond the {} of its start; this host has {} {}: \
             machine.memory = {} with this workload is more than it can simulate",
            at_ns as f64 / 1e9,
            human(grown),
            human(self.at_start),
            human(self.limit.bytes),
            self.limit.what,
            self.memory
        )
    }
}

/// Refuses a run whose start exceeds `limits` (one line naming the need and the limit);
/// returns the [`Budget`] it may grow by when using all its memory could exceed them.
pub fn check_against(sc: &Scenario, limits: HostLimits) -> Result<Option<Budget>> {
    let n = need(sc);
    if let Some(l) = limits.address {
        if n.address_space() > l.bytes {
            return Err(Error::Capacity(format!(
                "machine.memory = {} needs {} of address space for its frame table ({} in \
                 all); this host has {} {}",
                sc.machine.memory,
                human(n.frame_table),
                human(n.address_space()),
                human(l.bytes),
                l.what
            )));
        }
    }
    let Some(l) = limits.resident else {
        return Ok(None);
    };
    let start = n.at_start();
    if start > l.bytes {
        return Err(Error::Capacity(format!(
            "{} ({} in all); this host has {} {}",
            largest_part(sc, &n),
            human(start),
            human(l.bytes),
            l.what
        )));
    }
    Ok((n.total() > l.bytes).then(|| Budget {
        limit: l,
        at_start: start,
        memory: sc.machine.memory.to_string(),
    }))
}

/// Refuses a run this host cannot start ([`check_against`] with [`host_limits`]); the
/// budget of a run that could outgrow it.
pub fn check(sc: &Scenario) -> Result<Option<Budget>> {
    check_against(sc, host_limits())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sc(text: &str) -> Scenario {
        Scenario::from_toml(text).unwrap()
    }

    fn limits(bytes: u64) -> HostLimits {
        HostLimits {
            resident: Some(HostLimit {
                bytes,
                what: "available",
            }),
            address: None,
        }
    }

    #[test]
    fn frame_table_is_16_bytes_a_frame() {
        // DESIGN.md's target and `vmsim bench`'s bytes_per_frame.
        assert_eq!(BYTES_PER_FRAME, 16);
        let n = need(&sc("[machine]\nmemory = \"8TiB\"\nswap = \"4TiB\"\n"));
        assert_eq!(n.frame_table, (8u64 << 40) / 4096 * 16);
        assert_eq!(n.swap, (4u64 << 40) / 4096 * 13);
        assert_eq!(n.page_tables, (12u64 << 40) / 4096 * 8);
        assert_eq!(human(n.frame_table), "34.4 GB");
    }

    /// Boot writes only partial blocks at range ends: what `Mm::boot` leaves untouched
    /// (free and reserved whole blocks) is the rest.
    #[test]
    fn boot_written_frames_bound_what_boot_writes() {
        for text in [
            "",
            "[machine]\nmemory = \"64GiB\"\nnodes = 2\n",
            "[machine]\nmemory = \"1TiB\"\nnodes = 4\n",
        ] {
            let s = sc(text);
            let mm = crate::mm::Mm::boot(&s.machine, &s.kernel, &s.cost);
            let written = mm.map.len() as u64 - mm.deferred.untouched_blocks() * 1024;
            let bound = boot_written_frames(&s.machine);
            assert!(written <= bound, "{text}: {written} > {bound}");
            assert!(bound < 64 * 1024, "{text}: {bound}");
        }
    }

    /// A boot that shuffles the free lists writes every free block: what
    /// `shuffled_boot_frames` counts at the start, and none of it counts as growth.
    #[test]
    fn a_shuffled_boot_writes_what_the_start_counts() {
        for text in [
            "[machine]\nmemory = \"4GiB\"\nmixed_free_lists = true\n",
            "[machine]\nmemory = \"64GiB\"\nnodes = 2\n[kernel]\nshuffle_page_alloc = true\n",
        ] {
            let s = sc(text);
            let eng = crate::sim::build(&s);
            let mm = &eng.kernel.mm;
            let written = mm.map.len() as u64 - mm.deferred.untouched_blocks() * 1024;
            let counted = shuffled_boot_frames(&s.machine);
            assert!(written <= counted, "{text}: {written} > {counted}");
            // Only the reserved memmap (1/64) and partial blocks are left out.
            assert!(counted > mm.map.len() as u64 / 64 * 62, "{text}: {counted}");
            assert_eq!(mm.frames_written_since_boot(), 0, "{text}");
            assert_eq!(
                need(&s).frame_table_boot,
                counted * BYTES_PER_FRAME
                    + ((s.machine.memory.0 / PAGE_SIZE) >> 9) * BYTES_PER_PAGEBLOCK
            );
        }
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
        assert_eq!(
            n.at_start(),
            n.frame_table_boot + n.swap + n.tasks + n.memcgs + n.samples
        );
    }

    /// A machine larger than the host starts when its start fits, watched by a budget of
    /// what is left; one whose start does not fit is one line.
    #[test]
    fn a_machine_larger_than_the_host_runs_under_a_budget() {
        let s = sc("[machine]\nmemory = \"8TiB\"\nswap = \"4TiB\"\n");
        let n = need(&s);
        let b = check_against(&s, limits(22_100_000_000)).unwrap().unwrap();
        assert_eq!(b.bytes(), 22_100_000_000 - n.at_start());
        assert_eq!(b.memory, "8TiB");
        let line = b.exceeded(3_210_000_000, 21_000_000_000);
        assert!(
            line.starts_with("at simulated time 3.210 s the run's frame table"),
            "{line}"
        );
        assert!(
            line.contains("had grown by 21.0 GB") && !line.contains('\n'),
            "{line}"
        );
        let e = check_against(&s, limits(10_000_000_000))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("machine.swap = 4TiB needs 14.0 GB of host memory for its swap map"),
            "{e}"
        );
        assert!(e.ends_with("this host has 10.0 GB available"), "{e}");
        assert!(!e.contains('\n'));
        // The default fits whole: no budget to watch.
        assert_eq!(check_against(&sc(""), limits(22_100_000_000)), Ok(None));
        assert_eq!(check_against(&s, HostLimits::default()), Ok(None));
    }

    #[test]
    fn address_space_under_rlimit_as_is_checked() {
        let s = sc("[machine]\nmemory = \"8TiB\"\n");
        let l = HostLimits {
            resident: None,
            address: Some(HostLimit {
                bytes: 30_000_000_000,
                what: "left under RLIMIT_AS",
            }),
        };
        let e = check_against(&s, l).unwrap_err().to_string();
        assert!(
            e.starts_with("machine.memory = 8TiB needs 34.4 GB of address space"),
            "{e}"
        );
        assert!(
            e.ends_with("this host has 30.0 GB left under RLIMIT_AS"),
            "{e}"
        );
    }

    #[test]
    fn samples_name_their_keys() {
        let s = sc(
            "duration = \"199s\"\n[sampling]\ninterval = \"1ms\"\n[machine]\nmemory=\"64MiB\"\n",
        );
        let e = check_against(&s, limits(100 << 20))
            .unwrap_err()
            .to_string();
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
