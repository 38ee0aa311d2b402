//! One simulation run: boot the machine, start the workload, sample, report.

use crate::config::Scenario;
use crate::kernel::{Engine, Kernel};
use crate::mm::mmzone::{Wmark, MAX_PAGE_ORDER, MIGRATE_TYPES, NR_PAGE_ORDERS, PAGEBLOCK_ORDER};
use crate::mm::page::{pg, Pfn};
use crate::mm::vmstat::{vmstat_text, Event, VmstatSnapshot};
use crate::mm::{FragStats, Mm};
use indexmap::IndexMap;
use serde::Serialize;

/// The version of vmsim that produced a result.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Totals of a run.
#[derive(Debug, Clone, Serialize)]
pub struct Summary {
    /// Simulated time until the last task exited, or the time limit [s].
    pub elapsed_seconds: f64,
    /// User time over all CPUs [s].
    pub user_seconds: f64,
    /// System time over all CPUs [s].
    pub sys_seconds: f64,
    /// Idle time over all CPUs [s].
    pub idle_seconds: f64,
    /// Time tasks spent in the allocator slow path [s].
    pub alloc_stall_seconds: f64,
    /// Time tasks waited on run queues [s].
    pub runq_wait_seconds: f64,
    /// User tasks started (kernel threads are not counted).
    pub tasks_started: u64,
    /// Tasks that could not be created.
    pub fork_failures: u64,
    /// Tasks killed by the OOM killer.
    pub oom_kills: u64,
    /// Allocation requests that failed.
    pub alloc_failures: u64,
    /// mm_page_alloc_extfrag events.
    pub extfrag_events: u64,
    /// Pageblocks holding allocations of more than one mobility at the end.
    pub mixed_pageblocks: u64,
    /// The most mixed pageblocks seen in any sample.
    pub mixed_pageblocks_max: u64,
    /// Most tasks in direct reclaim at once.
    pub max_parallel_reclaimers: u64,
    /// Longest single try_to_free_pages, including its naps [ms].
    pub max_try_to_free_pages_ms: f64,
    /// Direct reclaims that waited at the reclaimer limit (reclaim_throttle = limit).
    pub reclaim_throttled: u64,
    /// Whether every task exited before the time limit.
    pub completed: bool,
}

/// One zone's configuration and end state, as /proc/zoneinfo would show it.
#[derive(Debug, Clone, Serialize)]
pub struct ZoneReport {
    /// Node.
    pub node: usize,
    /// Zone name.
    pub zone: &'static str,
    /// present_pages.
    pub present: u64,
    /// managed_pages.
    pub managed: u64,
    /// Free pages at the end.
    pub free: i64,
    /// min, low, high, promo watermarks [pages].
    pub watermarks: [u64; 4],
    /// lowmem_reserve (protection) [pages].
    pub lowmem_reserve: Vec<u64>,
    /// pcp->high.
    pub pcp_high: u32,
    /// pcp->batch.
    pub pcp_batch: u32,
    /// zone->lock acquisitions.
    pub lock_acquisitions: u64,
    /// zone->lock acquisitions that spun.
    pub lock_contentions: u64,
    /// Time spent spinning on zone->lock [ns].
    pub lock_wait_ns: u64,
}

/// Per-command task totals.
#[derive(Debug, Clone, Serialize, Default)]
pub struct TaskGroup {
    /// Tasks with this comm.
    pub count: u64,
    /// User time [s].
    pub user_seconds: f64,
    /// System time [s].
    pub sys_seconds: f64,
    /// Allocation stall time [s].
    pub alloc_stall_seconds: f64,
    /// Page faults.
    pub faults: u64,
    /// Largest resident set of one task [pages].
    pub max_rss_pages: u64,
    /// Failed allocations.
    pub alloc_failed: u64,
    /// Tasks OOM-killed.
    pub oom_killed: u64,
    /// Mean completion time of the tasks that exited [s].
    pub mean_runtime_seconds: f64,
}

/// The pageblocks of one zone at the end of a run: type and contents of each (the picture of fragmentation).
#[derive(Debug, Clone, Serialize)]
pub struct PageblockMap {
    /// Node.
    pub node: usize,
    /// Zone name.
    pub zone: &'static str,
    /// First frame of the first pageblock.
    pub start_pfn: u64,
    /// Migratetype of each pageblock: U(nmovable), M(ovable), R(eclaimable), H(ighAtomic), I(solate).
    pub migratetype: String,
    /// Free pages in each pageblock (buddy lists).
    pub free: Vec<u16>,
    /// Allocated pages in each pageblock by mobility: [unmovable, movable, reclaimable].
    pub used: Vec<[u16; 3]>,
}

impl Mm {
    /// The pageblock map of every populated zone.
    pub fn pageblock_map(&self) -> Vec<PageblockMap> {
        let mut out = Vec::new();
        for z in self.zones.iter().filter(|z| z.populated()) {
            let first = z.zone_start_pfn >> PAGEBLOCK_ORDER;
            let last = z.zone_end_pfn().div_ceil(1 << PAGEBLOCK_ORDER);
            let mut m = PageblockMap {
                node: z.nid,
                zone: z.zone_type.name(),
                start_pfn: first << PAGEBLOCK_ORDER,
                migratetype: String::new(),
                free: Vec::new(),
                used: Vec::new(),
            };
            for pb in first..last {
                m.migratetype
                    .push(['U', 'M', 'R', 'H', 'I'][self.pageblock_mt[pb as usize] as usize]);
                let (mut free, mut used) = (0u16, [0u16; 3]);
                let start: Pfn = pb << PAGEBLOCK_ORDER;
                let end = start + (1 << PAGEBLOCK_ORDER);
                // A block larger than a pageblock starts at an earlier pageblock: find its head.
                let mut p = start;
                let head = start & !((1 << MAX_PAGE_ORDER) - 1);
                let big = self.frame(head);
                if head < start
                    && big.order() > PAGEBLOCK_ORDER
                    && (big.test(pg::BUDDY) || big.test(pg::HEAD))
                    && head + (1 << big.order()) > start
                {
                    let n = (1u32 << PAGEBLOCK_ORDER) as u16;
                    if big.test(pg::BUDDY) {
                        free = n;
                    } else if (big.mt as usize) < 3 && !big.test(pg::RESERVED) {
                        used[big.mt as usize] = n;
                    }
                    p = end;
                }
                while p < end {
                    let page = &self.frame(p);
                    let n: Pfn = 1 << page.order();
                    if page.test(pg::BUDDY) {
                        free += n.min(end - p) as u16;
                        p += n;
                    } else if page.test(pg::HEAD) && !page.test(pg::RESERVED) {
                        if (page.mt as usize) < 3 {
                            used[page.mt as usize] += n.min(end - p) as u16;
                        }
                        p += n;
                    } else {
                        p += 1;
                    }
                }
                m.free.push(free);
                m.used.push(used);
            }
            out.push(m);
        }
        out
    }
}

/// Counters sampled over simulated time.
#[derive(Debug, Clone, Serialize, Default)]
pub struct TimeSeries {
    /// Sample times [s].
    pub time_seconds: Vec<f64>,
    /// Selected /proc/vmstat items, by name.
    pub vmstat: IndexMap<&'static str, Vec<i64>>,
    /// Free blocks per order summed over zones (a /proc/buddyinfo row per sample).
    pub buddyinfo: Vec<[u64; NR_PAGE_ORDERS]>,
    /// Pageblocks per migratetype summed over zones.
    pub pageblocks: Vec<[u64; MIGRATE_TYPES]>,
    /// Sum of min/low/high watermarks over zones (boost included) [pages].
    pub watermarks: Vec<[u64; 3]>,
    /// Pageblocks holding allocations of more than one mobility.
    pub mixed_pageblocks: Vec<u64>,
    /// Sum of the zones' watermark boosts [pages].
    pub watermark_boost: Vec<u64>,
}

/// One zone's counters at every sample of a run's timeline.
#[derive(Debug, Clone, Serialize, Default)]
pub struct ZoneTimeline {
    /// Node.
    pub node: usize,
    /// Zone name.
    pub zone: &'static str,
    /// Free pages (NR_FREE_PAGES).
    pub free: Vec<i64>,
    /// min/low/high watermarks, boost included (wmark_pages) [pages].
    pub watermarks: Vec<[u64; 3]>,
    /// The watermark boost [pages].
    pub boost: Vec<u64>,
    /// Free pages on the buddy lists of each migratetype (pagetypeinfo's counts times
    /// their order's size).
    pub free_by_migratetype: Vec<[u64; MIGRATE_TYPES]>,
}

/// A run's timeline for `vmsim run --perfetto`: every task's changes of state, and the
/// per-zone counters the time series sum, at its samples.
#[derive(Debug, Clone, Serialize, Default)]
pub struct Timeline {
    /// State names, by number ([`crate::engine::timeline::TIMELINE_STATES`]).
    pub states: Vec<&'static str>,
    /// Migratetype names, by number.
    pub migratetypes: Vec<&'static str>,
    /// Every task: (pid, comm, kernel thread), by task id.
    pub tasks: Vec<(u32, String, bool)>,
    /// Changes of state: (time [ns], task id, state number).
    pub changes: Vec<crate::engine::timeline::StateChange>,
    /// When the changes reached their maximum
    /// ([`crate::engine::timeline::MAX_STATE_CHANGES`]): the lanes are whole only
    /// before this time [ns].
    pub changes_full_at: Option<u64>,
    /// Sample times [ns].
    pub time_ns: Vec<u64>,
    /// nr_dirty at every sample.
    pub nr_dirty: Vec<i64>,
    /// nr_writeback at every sample.
    pub nr_writeback: Vec<i64>,
    /// Populated zones.
    pub zones: Vec<ZoneTimeline>,
}

impl Timeline {
    /// An empty timeline with a series for each populated zone of `mm`.
    fn new(mm: &Mm) -> Timeline {
        use crate::mm::mmzone::MigrateType;
        let zones = mm.zones.iter().filter(|z| z.populated());
        Timeline {
            states: crate::engine::timeline::TIMELINE_STATES.to_vec(),
            migratetypes: MigrateType::ALL.iter().map(|m| m.name()).collect(),
            zones: zones
                .map(|z| ZoneTimeline {
                    node: z.nid,
                    zone: z.zone_type.name(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    /// Samples the zones' counters and the dirty and writeback pages at `t`.
    fn sample(&mut self, mm: &Mm, snap: &VmstatSnapshot, t: u64) {
        self.time_ns.push(t);
        let item = |name: &str| snap.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v);
        self.nr_dirty.push(item("nr_dirty"));
        self.nr_writeback.push(item("nr_writeback"));
        for (series, z) in self
            .zones
            .iter_mut()
            .zip(mm.zones.iter().filter(|z| z.populated()))
        {
            series.free.push(z.free_pages());
            series.watermarks.push([
                z.wmark_pages(Wmark::Min),
                z.wmark_pages(Wmark::Low),
                z.wmark_pages(Wmark::High),
            ]);
            series.boost.push(z.watermark_boost);
            let mut mt = [0u64; MIGRATE_TYPES];
            for (o, area) in z.free_area.iter().enumerate() {
                for (i, n) in area.nr_free_mt.iter().enumerate() {
                    mt[i] += n << o;
                }
            }
            series.free_by_migratetype.push(mt);
        }
    }

    /// Takes the engine's changes of state and names its tasks.
    fn finish(&mut self, eng: &mut Engine) {
        if let Some(log) = eng.timeline.take() {
            self.changes = log.changes;
            self.changes_full_at = log.full_at;
        }
        self.tasks = (eng.kernel.tasks.iter().enumerate())
            .map(|(tid, t)| (crate::engine::pid_of(tid as u32), t.comm.clone(), t.kthread))
            .collect();
    }
}

/// Everything a run reports.
#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    /// vmsim version.
    pub vmsim_version: &'static str,
    /// Scenario name.
    pub scenario: String,
    /// Kernel name.
    pub kernel: String,
    /// Seed.
    pub seed: u64,
    /// Totals.
    pub summary: Summary,
    /// /proc/vmstat at the end, in the kernel's order.
    pub vmstat: IndexMap<&'static str, i64>,
    /// Counters that changed during the run (end minus boot), in the kernel's order.
    pub vmstat_delta: IndexMap<&'static str, i64>,
    /// External-fragmentation statistics.
    pub fragmentation: FragStats,
    /// Zones.
    pub zones: Vec<ZoneReport>,
    /// CPUs.
    pub cpus: Vec<crate::engine::Cpu>,
    /// Tasks by command name.
    pub tasks: IndexMap<String, TaskGroup>,
    /// Sampled counters.
    pub timeseries: TimeSeries,
    /// /proc files at the end: vmstat, buddyinfo, pagetypeinfo, slabinfo, meminfo, and
    /// swaps when there is a swap device.
    pub proc: IndexMap<&'static str, String>,
    /// Every pageblock's type and contents at the end (empty when the run was not asked
    /// for it, [`Control::pageblock_map`]: a walk of every pageblock of the machine).
    pub pageblocks: Vec<PageblockMap>,
    /// Anonymous fault latencies, base and huge apart, and thpfioscale's regions.
    pub thp: crate::mm::huge_memory::ThpReport,
    /// Figures the workload reported itself, e.g. `hackbench_seconds` (hackbench's "Time:") [s].
    pub workload: std::collections::BTreeMap<String, f64>,
    /// Memory cgroups, when the scenario declares any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcg: Option<crate::mm::memcontrol::MemcgReport>,
    /// /proc files read by the workload's `snapshot` operations.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub snapshots: Vec<crate::mm::vmstat::ProcSnapshot>,
    /// What the ext4 filesystem did, when the run created a file on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ext4: Option<crate::fs::ext4::Ext4Report>,
    /// What the XFS filesystem did, when the run created a file on it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub xfs: Option<crate::fs::xfs::XfsReport>,
    /// Where a limit (the wall-clock budget) cut the run short, when one did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut: Option<Cut>,
    /// Trace events not kept because the trace buffer held its maximum
    /// ([`crate::trace::MAX_TRACE_EVENTS`]), when any were dropped.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub trace_events_dropped: Option<u64>,
    /// The timeline, when the run was asked for it ([`Control::timeline`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeline: Option<Timeline>,
    /// Every swap device at the end, on or off, with its failed swapon/swapoff calls.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub swap_devices: Vec<crate::mm::swapfile::SwapDeviceReport>,
    /// zswap's debugfs counters (/sys/kernel/debug/zswap) at the end, when zswap is on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub zswap: Option<crate::mm::zswap::ZswapStats>,
}

/// Items recorded in the time series.
const SERIES: &[&str] = &[
    "nr_free_pages",
    "nr_free_pages_blocks",
    "nr_anon_pages",
    "nr_slab_reclaimable",
    "nr_slab_unreclaimable",
    "nr_page_table_pages",
    "nr_kernel_stack",
    "pgalloc_dma32",
    "pgalloc_normal",
    "pgfree",
    "pgfault",
    "allocstall_normal",
    "allocstall_movable",
    "slabs_scanned",
    "oom_kill",
    "pageoutrun",
    "pgscan_kswapd",
    "pgsteal_kswapd",
    "compact_stall",
    "compact_migrate_scanned",
    "compact_daemon_wake",
    "compact_daemon_migrate_scanned",
    "thp_fault_alloc",
    "thp_fault_fallback",
];

fn ns_to_s(ns: u64) -> f64 {
    ns as f64 / 1e9
}

impl Mm {
    /// Pageblocks holding allocations of more than one mobility (unmovable, reclaimable,
    /// movable): the blocks that fragmentation avoidance tries to keep few. Kept by the
    /// allocator's events ([`crate::mm::pageblock_stat`]); debug builds check it against a walk.
    pub fn mixed_pageblocks(&self) -> u64 {
        debug_assert_eq!(self.pb_stat.mixed, self.mixed_pageblocks_walk());
        self.pb_stat.mixed
    }

    fn sample(&self, snap: &VmstatSnapshot, ts: &mut TimeSeries, t: u64) {
        ts.time_seconds.push(ns_to_s(t));
        for (name, v) in snap {
            if let Some(series) = ts.vmstat.get_mut(name) {
                series.push(*v);
            }
        }
        let mut b = [0u64; NR_PAGE_ORDERS];
        let mut pb = [0u64; MIGRATE_TYPES];
        let mut wm = [0u64; 3];
        let mut boost = 0u64;
        for z in self.zones.iter().filter(|z| z.populated()) {
            for (o, area) in z.free_area.iter().enumerate() {
                b[o] += area.nr_free;
            }
            for (i, c) in self.pageblock_counts(z.id).iter().enumerate() {
                pb[i] += c;
            }
            wm[0] += z.wmark_pages(Wmark::Min);
            wm[1] += z.wmark_pages(Wmark::Low);
            wm[2] += z.wmark_pages(Wmark::High);
            boost += z.watermark_boost;
        }
        ts.watermark_boost.push(boost);
        ts.buddyinfo.push(b);
        ts.pageblocks.push(pb);
        ts.watermarks.push(wm);
        ts.mixed_pageblocks.push(self.mixed_pageblocks());
    }
}

/// Builds the engine for a scenario: boots the kernel, starts its threads and registers
/// every task of the workload.
pub fn build(sc: &Scenario) -> Engine {
    build_with(sc, true)
}

/// [`build`], with the workload's tasks registered only when `workloads` (a replay runs
/// its own task on the scenario's machine and kernel).
pub fn build_with(sc: &Scenario, workloads: bool) -> Engine {
    let kernel = Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
    let mut eng = kernel.into_engine(sc.sched.clone(), &sc.cost);
    if sc.kernel.shuffle_page_alloc || sc.machine.mixed_free_lists {
        eng.kernel
            .mm
            .shuffle_free_memory(sc.seed, sc.kernel.shuffle_page_alloc);
    }
    if !sc.swap.is_empty() {
        eng.kernel.swap = crate::mm::swapfile::SwapInfo::from_config(
            sc.machine.swap.0,
            &sc.swap,
            sc.disk.rotational,
            sc.kernel.rules().swap_slot_cache.then_some(sc.machine.cpus),
        );
    }
    if sc.kernel.nr_hugepages > 0 {
        eng.kernel
            .hugetlb_hstate_alloc_pages(sc.kernel.nr_hugepages);
    }
    eng.kernel.create_disk_files(&sc.files);
    crate::kernel::start_kthreads(&mut eng);
    eng.kernel.mm.memcg.create_from_specs(&sc.cgroups);
    eng.kernel.mm.memcg.stock =
        crate::mm::memcg_stock::MemcgStock::new(sc.kernel.rules().memcg_stock_groups, sc.seed);
    eng.kernel.mm.memcg.memsw_failcnt = sc.kernel.rules().memsw_failcnt;
    if workloads {
        sc.spawn_workloads(&mut eng);
        crate::workload::spawn_tasks(sc, &mut eng);
    }
    eng
}

/// Runs a scenario to the end; `progress(now, end)` is called after each sample.
pub fn run(sc: &Scenario, progress: &mut dyn FnMut(u64, u64)) -> RunResult {
    run_traced(sc, None, progress).0
}

/// Runs a scenario, recording the tracepoints `trace` enables in its format when given;
/// returns the result and the trace buffer.
pub fn run_traced(
    sc: &Scenario,
    trace: Option<(crate::trace::TraceFormat, crate::trace::EventFilter)>,
    progress: &mut dyn FnMut(u64, u64),
) -> (RunResult, Option<crate::trace::Tracer>) {
    let mut ctl = Control::new(progress);
    match run_controlled(sc, trace, &mut ctl) {
        Ok(r) => r,
        Err(e) => unreachable!("a run without checks or interruption cannot stop: {e}"),
    }
}

/// Events the engine processes between two looks at a run's [`Control`] (Ctrl-C, the
/// wall-clock budget): a few milliseconds of wall time at the engine's speed.
pub const POLL_EVENTS: u64 = 4096;

/// How a caller watches and bounds a run.
pub struct Control<'a> {
    /// Called after each sample with the simulated time and the run's end [ns].
    pub progress: &'a mut dyn FnMut(u64, u64),
    /// Asked every [`POLL_EVENTS`] events and after each sample; true stops the run at
    /// once without a result (Ctrl-C).
    pub interrupted: Option<&'a mut dyn FnMut() -> bool>,
    /// Wall-clock budget: when it is spent the run ends there, and its result is the
    /// partial one, marked [`Cut`].
    pub max_wall: Option<std::time::Duration>,
    /// Check the kernel's invariants ([`Kernel::check_accounting`]) at every sample and at
    /// the end; the first one broken stops the run.
    pub check_invariants: bool,
    /// Record the run's [`Timeline`] (every task's changes of state, per-zone counters).
    pub timeline: bool,
    /// Record the pageblock map at the end ([`RunResult::pageblocks`]); the map is a walk
    /// of every pageblock and a result proportional to the machine's size.
    pub pageblock_map: bool,
    /// What the run may grow by on this host ([`crate::capacity::check`]); looked at with
    /// the interruption, the run stops with [`Stopped::HostMemory`] when it is spent.
    pub budget: Option<crate::capacity::Budget>,
}

impl<'a> Control<'a> {
    /// A run watched only by `progress`: no interruption, no budget, no checks.
    pub fn new(progress: &'a mut dyn FnMut(u64, u64)) -> Control<'a> {
        Control {
            progress,
            interrupted: None,
            max_wall: None,
            check_invariants: cfg!(feature = "expensive-checks"),
            timeline: false,
            pageblock_map: true,
            budget: None,
        }
    }
}

/// Why a run ended without a result.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Stopped {
    /// The caller stopped it (Ctrl-C).
    #[error("interrupted at simulated time {:.3} s", ns_to_s(*at_ns))]
    Interrupted {
        /// Simulated time reached [ns].
        at_ns: u64,
    },
    /// A kernel invariant did not hold at a check.
    #[error("invariant broken at simulated time {:.3} s: {what}", ns_to_s(*at_ns))]
    Invariant {
        /// Simulated time of the check [ns].
        at_ns: u64,
        /// The invariant and how it failed.
        what: String,
    },
    /// The run outgrew what the host can give it ([`crate::capacity::Budget`]).
    #[error("{message}")]
    HostMemory {
        /// Simulated time it was seen [ns].
        at_ns: u64,
        /// One line: what the run had grown by, and the host's limit.
        message: String,
    },
}

/// A run that a limit cut short: where, and which limit.
#[derive(Debug, Clone, Serialize)]
pub struct Cut {
    /// Simulated time the run reached; the result describes the run up to here [s].
    pub at_seconds: f64,
    /// The limit reached, e.g. `wall-clock budget of 5 s (--max-wall)`.
    pub reason: String,
}

/// [`run_traced`] under a [`Control`]: stops when interrupted (no result), cuts the run
/// short when the wall-clock budget is spent (the partial result, with [`RunResult::cut`]),
/// and checks the kernel's invariants when asked.
pub fn run_controlled(
    sc: &Scenario,
    trace: Option<(crate::trace::TraceFormat, crate::trace::EventFilter)>,
    ctl: &mut Control,
) -> Result<(RunResult, Option<crate::trace::Tracer>), Stopped> {
    let wall = std::time::Instant::now();
    run_built(sc, build(sc), trace, ctl, wall)
}

/// [`run_controlled`] of an engine [`build`] made for `sc`; `wall` is when the run began
/// (the wall-clock budget counts from it).
pub fn run_built(
    sc: &Scenario,
    mut eng: Engine,
    trace: Option<(crate::trace::TraceFormat, crate::trace::EventFilter)>,
    ctl: &mut Control,
    wall: std::time::Instant,
) -> Result<(RunResult, Option<crate::trace::Tracer>), Stopped> {
    if let Some((fmt, events)) = trace {
        let tracer = crate::trace::Tracer::with_events(fmt, sc.machine.cpus, events);
        eng.kernel.mm.set_tracer(Some(tracer));
    }
    let boot_snap = eng.kernel.vmstat_snapshot();
    let mut ts = TimeSeries::default();
    for name in SERIES {
        ts.vmstat.insert(name, Vec::new());
    }
    eng.kernel.mm.sample(&boot_snap, &mut ts, 0);
    let mut timeline = ctl.timeline.then(|| Timeline::new(&eng.kernel.mm));
    if let Some(tl) = &mut timeline {
        eng.timeline = Some(Default::default());
        tl.sample(&eng.kernel.mm, &boot_snap, 0);
    }
    let end = sc.duration.0;
    let interval = sc.sampling.interval.0;
    let mut t = 0;
    let mut cut: Option<Cut> = None;
    // Whether to stop now: Err when interrupted, true when the wall-clock budget is spent.
    let look = |ctl: &mut Control, now: u64| -> Result<bool, Stopped> {
        if ctl.interrupted.as_mut().is_some_and(|f| f()) {
            return Err(Stopped::Interrupted { at_ns: now });
        }
        Ok(ctl.max_wall.is_some_and(|w| wall.elapsed() >= w))
    };
    'run: while t < end && eng.live_user_tasks > 0 {
        t = (t + interval).min(end);
        while !eng.run_until_at_most(t, POLL_EVENTS) {
            within_budget(ctl, &eng)?;
            if look(ctl, eng.now)? {
                cut = Some(wall_cut(ctl, eng.now));
                break 'run;
            }
        }
        let snap = eng.kernel.vmstat_snapshot();
        eng.kernel.mm.sample(&snap, &mut ts, t);
        if let Some(tl) = &mut timeline {
            tl.sample(&eng.kernel.mm, &snap, t);
        }
        (ctl.progress)(t, end);
        within_budget(ctl, &eng)?;
        if ctl.check_invariants {
            check_invariants(&eng, t)?;
        }
        if look(ctl, t)? && t < end && eng.live_user_tasks > 0 {
            cut = Some(wall_cut(ctl, t));
            break;
        }
    }
    let completed = eng.live_user_tasks == 0;
    let elapsed = match &cut {
        Some(_) => {
            // The state at the cut, as the last sample.
            let at = eng.now;
            if ts.time_seconds.last() != Some(&ns_to_s(at)) {
                let snap = eng.kernel.vmstat_snapshot();
                eng.kernel.mm.sample(&snap, &mut ts, at);
                if let Some(tl) = &mut timeline {
                    tl.sample(&eng.kernel.mm, &snap, at);
                }
            }
            at
        }
        None if completed => eng
            .kernel
            .tasks
            .iter()
            .map(|t| t.stats.exit_ns)
            .max()
            .unwrap_or(0),
        None => end,
    };
    if ctl.check_invariants {
        check_invariants(&eng, eng.now)?;
    }
    // When every task has exited, the CPUs have been idle since at most the last exit.
    eng.finish_at(elapsed.min(eng.now));
    let mut r = result(
        sc,
        &eng,
        &boot_snap,
        ts,
        elapsed,
        completed,
        ctl.pageblock_map,
    );
    r.cut = cut;
    if let Some(mut tl) = timeline {
        tl.finish(&mut eng);
        r.timeline = Some(tl);
    }
    let tracer = eng.kernel.mm.tracer.take();
    if let Some(tr) = &tracer {
        r.trace_events_dropped = (tr.dropped() > 0).then_some(tr.dropped());
    }
    Ok((r, tracer))
}

/// Stops a run that has grown past its host memory budget ([`Control::budget`]).
fn within_budget(ctl: &Control, eng: &Engine) -> Result<(), Stopped> {
    let Some(b) = &ctl.budget else { return Ok(()) };
    let grown = eng.kernel.host_bytes_grown();
    if grown <= b.bytes() {
        return Ok(());
    }
    Err(Stopped::HostMemory {
        at_ns: eng.now,
        message: b.exceeded(eng.now, grown),
    })
}

/// The cut of a run whose wall-clock budget ran out at simulated time `now`.
fn wall_cut(ctl: &Control, now: u64) -> Cut {
    let budget = ctl.max_wall.map(|w| w.as_secs_f64()).unwrap_or(0.0);
    Cut {
        at_seconds: ns_to_s(now),
        reason: format!("wall-clock budget of {budget} s reached"),
    }
}

/// The kernel's expensive invariants at simulated time `at`.
fn check_invariants(eng: &Engine, at: u64) -> Result<(), Stopped> {
    eng.kernel
        .check_accounting()
        .map_err(|what| Stopped::Invariant { at_ns: at, what })
}

fn result(
    sc: &Scenario,
    eng: &Engine,
    boot: &VmstatSnapshot,
    ts: TimeSeries,
    elapsed: u64,
    completed: bool,
    pageblock_map: bool,
) -> RunResult {
    let k = &eng.kernel;
    let mm = &k.mm;
    let snap = k.vmstat_snapshot();
    let vmstat: IndexMap<&'static str, i64> = snap.iter().cloned().collect();
    let mut delta = IndexMap::new();
    for ((name, v), (_, b)) in snap.iter().zip(boot.iter()) {
        if v != b {
            delta.insert(*name, v - b);
        }
    }
    let mut tasks: IndexMap<String, TaskGroup> = IndexMap::new();
    let mut runtime_sum: IndexMap<String, (u64, u64)> = IndexMap::new();
    for t in &k.tasks {
        let g = tasks.entry(t.comm.clone()).or_default();
        g.count += 1;
        g.user_seconds += ns_to_s(t.stats.user_ns);
        g.sys_seconds += ns_to_s(t.stats.sys_ns);
        g.alloc_stall_seconds += ns_to_s(t.stats.alloc_stall_ns);
        g.faults += t.stats.faults;
        g.max_rss_pages = g.max_rss_pages.max(t.stats.max_rss);
        g.alloc_failed += t.stats.alloc_failed;
        g.oom_killed += t.oom_killed as u64;
        if !t.alive && !t.oom_killed {
            let e = runtime_sum.entry(t.comm.clone()).or_default();
            e.0 += t.stats.exit_ns - t.stats.start_ns;
            e.1 += 1;
        }
    }
    for (comm, (sum, n)) in runtime_sum {
        if let Some(g) = tasks.get_mut(&comm) {
            g.mean_runtime_seconds = ns_to_s(sum) / n as f64;
        }
    }
    let zones = mm
        .zones
        .iter()
        .filter(|z| z.populated())
        .map(|z| {
            let pcp = &mm.pcp[z.id * mm.nr_cpus];
            ZoneReport {
                node: z.nid,
                zone: z.zone_type.name(),
                present: z.present_pages,
                managed: z.managed_pages,
                free: z.free_pages(),
                watermarks: z.watermark,
                lowmem_reserve: z.lowmem_reserve.to_vec(),
                pcp_high: pcp.high,
                pcp_batch: pcp.batch,
                lock_acquisitions: z.lock.acquisitions,
                lock_contentions: z.lock.contentions,
                lock_wait_ns: z.lock.wait_ns,
            }
        })
        .collect();
    let cpus = eng.cpus.clone();
    let summary = Summary {
        elapsed_seconds: ns_to_s(elapsed),
        user_seconds: ns_to_s(cpus.iter().map(|c| c.user_ns).sum()),
        sys_seconds: ns_to_s(cpus.iter().map(|c| c.sys_ns).sum()),
        idle_seconds: ns_to_s(cpus.iter().map(|c| c.idle_ns).sum()),
        alloc_stall_seconds: ns_to_s(k.tasks.iter().map(|t| t.stats.alloc_stall_ns).sum()),
        runq_wait_seconds: ns_to_s(k.tasks.iter().map(|t| t.stats.runq_wait_ns).sum()),
        tasks_started: k.tasks.iter().filter(|t| !t.kthread).count() as u64,
        fork_failures: eng.fork_failures,
        oom_kills: mm.events[Event::OOM_KILL as usize],
        alloc_failures: mm.frag.alloc_fail.iter().sum(),
        extfrag_events: mm.frag.extfrag_events,
        mixed_pageblocks: mm.mixed_pageblocks(),
        mixed_pageblocks_max: ts.mixed_pageblocks.iter().copied().max().unwrap_or(0),
        max_parallel_reclaimers: k.max_parallel_reclaimers,
        max_try_to_free_pages_ms: k.max_try_to_free_pages_ns as f64 / 1e6,
        reclaim_throttled: k.reclaim_throttled,
        completed,
    };
    let mut proc = IndexMap::new();
    proc.insert("vmstat", vmstat_text(&snap));
    proc.insert("buddyinfo", mm.buddyinfo());
    proc.insert("pagetypeinfo", mm.pagetypeinfo());
    proc.insert("slabinfo", k.slab.slabinfo());
    proc.insert("meminfo", k.meminfo());
    if !k.swap.devices.is_empty() {
        proc.insert("swaps", k.swap.proc_swaps());
    }
    RunResult {
        vmsim_version: VERSION,
        scenario: sc.name.clone(),
        kernel: sc.kernel.name.clone(),
        seed: sc.seed,
        summary,
        vmstat,
        vmstat_delta: delta,
        fragmentation: mm.frag.clone(),
        zones,
        cpus,
        tasks,
        timeseries: ts,
        proc,
        pageblocks: if pageblock_map {
            mm.pageblock_map()
        } else {
            Vec::new()
        },
        thp: k.thp.report(),
        workload: k.metrics.clone(),
        memcg: mm.memcg.enabled().then(|| mm.memcg.report(&mm.nodes)),
        snapshots: k.proc_snapshots.clone(),
        ext4: k.ext4_report(),
        xfs: k.xfs_report(),
        cut: None,
        trace_events_dropped: None,
        timeline: None,
        swap_devices: k.swap.devices.iter().map(Into::into).collect(),
        zswap: k.zswap.enabled.then(|| k.zswap.debugfs()),
    }
}
