//! The engine's own speed and memory figures (`vmsim bench --json`).
//!
//! Wall-clock time is read here and only here; it never reaches a simulation result.

use crate::config::Scenario;
use crate::engine::rng::{streams, Stream};
use crate::mm::gfp::{GFP_HIGHUSER_MOVABLE, GFP_KERNEL, GFP_KERNEL_RECLAIMABLE};
use crate::mm::mmzone::MAX_PAGE_ORDER;
use crate::mm::page::Pfn;
use crate::mm::Mm;
use serde::Serialize;
use std::time::Instant;

/// Benchmark figures.
#[derive(Debug, Clone, Serialize)]
pub struct BenchResult {
    /// Order-0 allocation+free pairs per second through the per-CPU lists, one core.
    pub order0_ops_per_sec: f64,
    /// Allocation+free pairs per second with random orders 0..=10 and all migratetypes.
    pub mixed_ops_per_sec: f64,
    /// Bytes of the booted allocator (its heap and its frame table's mapping) per simulated
    /// 4 KiB frame on a 64 GiB machine (None when no counting allocator is installed).
    pub bytes_per_frame: Option<f64>,
    /// Simulated seconds per wall second for the default scenario.
    pub sim_seconds_per_wall_second: f64,
    /// Pages scanned per wall second inside direct reclaim (try_to_free_pages), swap on a fast device.
    pub reclaim_pages_scanned_per_sec: f64,
    /// Order-0 alloc+free throughput with mobility grouping ÷ without, measured side by side.
    pub grouping_cost_ratio: f64,
    /// Wall seconds of seed 000's full-size reproduction: hackbench 120 process 1000,
    /// reclaim_throttle off and limit, 3 runs each, one after another on one core
    /// (None when no throttle scenario was given).
    pub throttle_repro_wall_seconds: Option<f64>,
    /// Memory cgroups visited per wall second by global reclaim's hierarchy walk
    /// (shrink_node_memcgs over 100,000 empty groups in a binary tree), one core.
    pub memcg_iter_groups_per_sec: f64,
    /// Files created per wall second on ext4 (open with O_CREAT of a new name: the inode,
    /// the dentry, the directory entry and the metadata blocks they dirty, with a jbd2
    /// commit every 100,000 files), one core.
    pub files_created_per_sec: f64,
}

/// Wall seconds to run `base` (the full-size template of `vmsim reproduce throttle`, which
/// the Python package owns and passes in) with both kernels of seed 000, seeds 1..=3.
pub fn throttle_repro_wall_seconds(base: &Scenario) -> f64 {
    let t0 = Instant::now();
    for mode in [
        crate::config::ReclaimThrottle::Off,
        crate::config::ReclaimThrottle::Limit,
    ] {
        for seed in 1..=3 {
            let mut sc = base.clone();
            sc.kernel.reclaim_throttle = mode;
            sc.seed = seed;
            crate::sim::run(&sc, &mut |_, _| {});
        }
    }
    t0.elapsed().as_secs_f64()
}

/// The machine of the reclaim benchmark: 1 GiB, swap on a fast device, so that the
/// reclaim code itself, not the disk, is what is measured.
pub const RECLAIM_BENCH_SCENARIO: &str = r#"
name = "reclaim-bench"
[machine]
memory = "1GiB"
cpus = 1
swap = "4GiB"
[disk]
read_bandwidth = 20000000000
write_bandwidth = 20000000000
latency = 5000
"#;

/// Pages scanned per wall second inside direct reclaim (try_to_free_pages → shrink_node on
/// a node full of anonymous memory), one core. Between calls, untimed, simulated time
/// moves on 10 ms (the swap writes complete) and the task faults in 4 MiB more.
pub fn reclaim_speed(min_seconds: f64) -> f64 {
    use crate::mm::memory::Fault;
    let sc =
        Scenario::from_toml(RECLAIM_BENCH_SCENARIO).expect("the reclaim bench scenario parses");
    let mut scanned = 0u64;
    let mut timed = 0f64;
    while timed < min_seconds {
        let mut k =
            crate::kernel::Kernel::boot_with_disk(&sc.machine, &sc.kernel, &sc.cost, &sc.disk);
        let tid = k.alloc_task_struct("hog", 0, false);
        k.tasks[tid as usize].alive = true;
        // The loop drives time itself: nobody sleeps.
        k.mm.cur.atomic = true;
        let ram = k.mm.zones.iter().map(|z| z.managed_pages).sum::<u64>();
        let mut index = 0u64;
        let touch = |k: &mut crate::kernel::Kernel, n: u64, index: &mut u64| {
            for _ in 0..n {
                if matches!(
                    k.handle_mm_fault(tid, *index),
                    Fault::Failed | Fault::Killed
                ) {
                    return false;
                }
                *index += 1;
            }
            true
        };
        touch(&mut k, ram * 9 / 10, &mut index);
        // Stop well before swap (4 GiB) runs out.
        while index < ram * 4 && timed < min_seconds {
            let before = k.mm.events[crate::mm::vmstat::Event::PGSCAN_DIRECT as usize];
            let t0 = Instant::now();
            let _ = k.try_to_free_pages(GFP_HIGHUSER_MOVABLE, 0, tid);
            timed += t0.elapsed().as_secs_f64();
            scanned += k.mm.events[crate::mm::vmstat::Event::PGSCAN_DIRECT as usize] - before;
            k.mm.cur.acc = 0;
            k.mm.cur.now += 10_000_000;
            let now = k.mm.cur.now;
            k.process_io(now);
            if !touch(&mut k, 1024, &mut index) {
                break;
            }
        }
    }
    scanned as f64 / timed
}

fn small_mm(memory: &str) -> Mm {
    mm_with(memory, true)
}

fn mm_with(memory: &str, grouping: bool) -> Mm {
    let sc = Scenario::from_toml(&format!(
        "[machine]\nmemory=\"{memory}\"\ncpus=1\n[kernel]\nmobility_grouping={grouping}\n"
    ))
    .expect("built-in bench scenario");
    Mm::boot(&sc.machine, &sc.kernel, &sc.cost)
}

/// Runs `rounds` bursts of 64 order-0 allocations then 64 frees; returns pairs done.
fn order0_bursts(mm: &mut Mm, rounds: u64) -> u64 {
    let mut held: Vec<Pfn> = Vec::with_capacity(64);
    for _ in 0..rounds {
        for _ in 0..64 {
            let (p, _) = mm.alloc_pages_fast(GFP_HIGHUSER_MOVABLE, 0, 0, 0);
            held.push(p.expect("a 1GiB machine has free pages"));
        }
        for p in held.drain(..) {
            mm.free_pages(p, 0, 0);
        }
    }
    mm.cur.acc = 0;
    rounds * 64
}

/// Order-0 allocation throughput with mobility grouping ÷ without (the seed's AIM9
/// page_test comparison): the two allocators run in alternation in one process so
/// machine noise hits both alike.
/// ALLOC_NOFRAGMENT (5.0) is off in both, so the ratio is the cost of grouping itself,
/// as the seed compared 2.6.14 with and without it.
pub fn grouping_cost_ratio(min_seconds: f64) -> f64 {
    let mut on = mm_with("1GiB", true);
    let mut off = mm_with("1GiB", false);
    on.kcfg.alloc_nofragment = false;
    off.kcfg.alloc_nofragment = false;
    let (mut t_on, mut t_off, mut n_on, mut n_off) = (0.0, 0.0, 0u64, 0u64);
    let mut round = 0u64;
    while t_on + t_off < 2.0 * min_seconds {
        // Alternate which allocator goes first, so neither always runs on a warmed cache.
        for first in [round.is_multiple_of(2), !round.is_multiple_of(2)] {
            let t = Instant::now();
            if first {
                n_on += order0_bursts(&mut on, 2000);
                t_on += t.elapsed().as_secs_f64();
            } else {
                n_off += order0_bursts(&mut off, 2000);
                t_off += t.elapsed().as_secs_f64();
            }
        }
        round += 1;
    }
    (n_on as f64 / t_on) / (n_off as f64 / t_off)
}

/// Order-0 alloc+free pairs per second: bursts of 64 allocations, then 64 frees.
pub fn order0_ops_per_sec(min_seconds: f64) -> f64 {
    let mut mm = small_mm("4GiB");
    let mut held: Vec<Pfn> = Vec::with_capacity(64);
    let mut ops = 0u64;
    let t0 = Instant::now();
    loop {
        for _ in 0..1000 {
            for _ in 0..64 {
                let (p, _) = mm.alloc_pages_fast(GFP_KERNEL, 0, 0, 0);
                held.push(p.expect("a 4GiB machine has free pages"));
            }
            for p in held.drain(..) {
                mm.free_pages(p, 0, 0);
            }
            ops += 64;
        }
        mm.cur.acc = 0;
        let dt = t0.elapsed().as_secs_f64();
        if dt >= min_seconds {
            return ops as f64 / dt;
        }
    }
}

/// Mixed alloc+free pairs per second: random order and type, a pool of live blocks.
pub fn mixed_ops_per_sec(min_seconds: f64) -> f64 {
    let mut mm = small_mm("4GiB");
    let mut rng = Stream::new(1, streams::BENCH);
    let gfps = [GFP_KERNEL, GFP_HIGHUSER_MOVABLE, GFP_KERNEL_RECLAIMABLE];
    let mut pool: Vec<(Pfn, usize)> = Vec::with_capacity(4096);
    let mut ops = 0u64;
    let t0 = Instant::now();
    loop {
        for _ in 0..20_000 {
            if pool.len() < 2048 {
                let order = rng.below(MAX_PAGE_ORDER as u64 + 1) as usize;
                let gfp = gfps[rng.below(3) as usize];
                if let (Some(p), _) = mm.alloc_pages_fast(gfp, order, 0, 0) {
                    pool.push((p, order));
                }
            } else {
                let i = rng.below(pool.len() as u64) as usize;
                let (p, o) = pool.swap_remove(i);
                mm.free_pages(p, o, 0);
                ops += 1;
            }
            if rng.below(2) == 0 && !pool.is_empty() {
                let i = rng.below(pool.len() as u64) as usize;
                let (p, o) = pool.swap_remove(i);
                mm.free_pages(p, o, 0);
                ops += 1;
            }
        }
        mm.cur.acc = 0;
        let dt = t0.elapsed().as_secs_f64();
        if dt >= min_seconds {
            return ops as f64 / dt;
        }
    }
}

/// Bytes per frame of a booted 64 GiB machine: the heap it allocated, given a reader of the
/// allocator's live bytes, and the frame table's own mapping (mm/memmap.rs).
pub fn bytes_per_frame(heap_bytes: &dyn Fn() -> usize) -> f64 {
    let before = heap_bytes();
    let mm = small_mm("64GiB");
    let after = heap_bytes();
    let frames = mm.map.len() as f64;
    let b = (after.saturating_sub(before) + mm.map.mapped_bytes()) as f64 / frames;
    drop(mm);
    b
}

/// Simulated seconds per wall second of the default scenario.
pub fn sim_speed() -> f64 {
    let sc =
        Scenario::from_toml(crate::config::DEFAULT_SCENARIO).expect("the default scenario parses");
    let t0 = Instant::now();
    let r = crate::sim::run(&sc, &mut |_, _| {});
    r.summary.elapsed_seconds / t0.elapsed().as_secs_f64()
}

/// A swap-heavy memory-cgroup scenario for [`scale_run`]: 512 MiB of anonymous memory
/// cycled three times through a v1 group of 256 MiB with swap (scenarios/swap-memcg.toml).
pub const SWAP_MEMCG_BENCH_SCENARIO: &str = r#"
name = "swap-memcg"
duration = "60s"
[machine]
memory = "2GiB"
cpus = 2
swap = "2GiB"
[[cgroup]]
path = "cyc"
limit_in_bytes = "256MiB"
[[task]]
name = "hog"
cgroup = "cyc"
program = [
  { op = "touch", size = "512MiB" },
  { op = "touch", size = "512MiB", write = false },
  { op = "touch", size = "512MiB", write = false },
]
"#;

/// The cases of `vmsim bench`'s speed at every size: the default scenario, the swap-heavy
/// memcg one, and the default workload for one simulated second on 1 TiB and 16 TiB.
pub const SCALE_CASES: &[&str] = &["default", "swap-memcg", "1TiB", "16TiB"];

/// The scenario of scale case `name` (one of [`SCALE_CASES`]); Err says why it cannot run
/// (a size above the largest machine, a machine this host cannot hold).
pub fn scale_scenario(name: &str) -> crate::Result<Scenario> {
    let sc = match name {
        "default" => Scenario::from_toml(crate::config::DEFAULT_SCENARIO)?,
        "swap-memcg" => Scenario::from_toml(SWAP_MEMCG_BENCH_SCENARIO)?,
        size => {
            let mut v: toml::Table = toml::from_str(crate::config::DEFAULT_SCENARIO)
                .expect("the default scenario parses");
            v.insert("duration".into(), "1s".into());
            if let Some(toml::Value::Table(m)) = v.get_mut("machine") {
                m.insert("memory".into(), size.into());
            }
            Scenario::from_toml(&toml::to_string(&v).expect("a TOML table prints"))?
        }
    };
    crate::capacity::check(&sc)?;
    Ok(sc)
}

/// One scenario's speed at its size.
#[derive(Debug, Clone, Serialize)]
pub struct ScaleRun {
    /// Simulated machine's memory [bytes].
    pub memory_bytes: u64,
    /// Wall seconds to boot the machine and build the engine.
    pub boot_seconds: f64,
    /// Wall seconds of the whole run, boot included.
    pub wall_seconds: f64,
    /// Simulated seconds the run covered.
    pub simulated_seconds: f64,
    /// Simulated seconds per wall second, boot included.
    pub sim_seconds_per_wall_second: f64,
}

/// Boots and runs `sc`, timing the boot and the whole run.
pub fn scale_run(sc: &Scenario) -> ScaleRun {
    let t0 = Instant::now();
    let eng = crate::sim::build(sc);
    let boot = t0.elapsed().as_secs_f64();
    let mut progress = |_, _| {};
    let mut ctl = crate::sim::Control::new(&mut progress);
    // As `vmsim run` prints it: no pageblock map.
    ctl.pageblock_map = false;
    let (r, _) = crate::sim::run_built(sc, eng, None, &mut ctl, t0)
        .unwrap_or_else(|e| unreachable!("a run without checks or interruption cannot stop: {e}"));
    let wall = t0.elapsed().as_secs_f64();
    ScaleRun {
        memory_bytes: sc.machine.memory.0,
        boot_seconds: boot,
        wall_seconds: wall,
        simulated_seconds: r.summary.elapsed_seconds,
        sim_seconds_per_wall_second: r.summary.elapsed_seconds / wall,
    }
}

/// Groups visited per wall second by shrink_node_memcgs over a binary tree of
/// 100,000 empty groups (the walk every soft_limit_reclaim kernel does).
pub fn memcg_iter_groups_per_sec(min_seconds: f64) -> f64 {
    let sc = Scenario::from_toml(
        "[machine]\nmemory=\"128MiB\"\ncpus=1\n[[cgroup]]\npath=\"bunch\"\n\
         generate = { shape = \"binary\", groups = 100000 }\n",
    )
    .expect("built-in bench scenario");
    let mut k = crate::kernel::Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
    k.mm.memcg.create_from_specs(&sc.cgroups);
    let tid = k.alloc_task_struct("bench", 0, true);
    let t0 = Instant::now();
    loop {
        for _ in 0..10 {
            let mut s = crate::mm::vmscan::ScanControl::new(GFP_KERNEL, 0, 32, tid, 0);
            k.shrink_node_memcgs(0, &mut s);
        }
        k.mm.cur.acc = 0;
        let dt = t0.elapsed().as_secs_f64();
        if dt >= min_seconds {
            return k.mm.memcg.walk.groups_visited as f64 / dt;
        }
    }
}

/// Files created per wall second: names `d{n / 10000}/file{n}` in directories of 10,000
/// files on a 16 GiB ext4 machine, through the path a `write` operation takes to open
/// a new file (lookup_or_create, vfs_create); a new machine every 2,000,000 files.
pub fn files_created_per_sec(min_seconds: f64) -> f64 {
    let sc = Scenario::from_toml("[machine]\nmemory=\"16GiB\"\ncpus=1\n")
        .expect("built-in bench scenario");
    let mut created = 0u64;
    let mut timed = 0f64;
    while timed < min_seconds {
        let mut k = crate::kernel::Kernel::boot(&sc.machine, &sc.kernel, &sc.cost);
        let tid = k.alloc_task_struct("creat", 0, false);
        k.tasks[tid as usize].alive = true;
        k.mm.cur.atomic = true;
        let t0 = Instant::now();
        let mut name = String::with_capacity(32);
        for n in 0..2_000_000u64 {
            use std::fmt::Write;
            name.clear();
            let _ = write!(name, "d{}/file{n}", n / 10_000);
            let ino = k.lookup_or_create(&name);
            let _ = k.vfs_create(tid, ino);
            if n % 100_000 == 99_999 {
                k.jbd2_journal_commit_transaction();
                k.mm.cur.acc = 0;
                if t0.elapsed().as_secs_f64() + timed >= min_seconds {
                    created += n + 1;
                    break;
                }
            }
            if n == 1_999_999 {
                created += n + 1;
            }
        }
        timed += t0.elapsed().as_secs_f64();
    }
    created as f64 / timed
}

/// Runs every benchmark; `throttle_scenario` is seed 000's reproduction template
/// (its benchmark is skipped when None).
pub fn run_all(
    min_seconds: f64,
    heap_bytes: Option<&dyn Fn() -> usize>,
    throttle_scenario: Option<&Scenario>,
) -> BenchResult {
    BenchResult {
        order0_ops_per_sec: order0_ops_per_sec(min_seconds),
        mixed_ops_per_sec: mixed_ops_per_sec(min_seconds),
        bytes_per_frame: heap_bytes.map(bytes_per_frame),
        sim_seconds_per_wall_second: sim_speed(),
        reclaim_pages_scanned_per_sec: reclaim_speed(min_seconds),
        grouping_cost_ratio: grouping_cost_ratio(min_seconds),
        throttle_repro_wall_seconds: throttle_scenario.map(throttle_repro_wall_seconds),
        memcg_iter_groups_per_sec: memcg_iter_groups_per_sec(min_seconds),
        files_created_per_sec: files_created_per_sec(min_seconds),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_cases_name_their_machines() {
        let sc = scale_scenario("1TiB").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(sc.machine.memory.0, 1 << 40);
        assert_eq!(sc.duration.0, 1_000_000_000);
        let default = Scenario::from_toml(crate::config::DEFAULT_SCENARIO).unwrap();
        assert_eq!(sc.tasks.len(), default.tasks.len(), "the default workload");
        let swap = scale_scenario("swap-memcg").unwrap();
        assert!(swap.machine.swap.0 > 0 && !swap.cgroups.is_empty());
    }

    #[test]
    fn a_machine_above_the_largest_is_refused_with_its_reason() {
        let e = scale_scenario("32TiB").unwrap_err().to_string();
        assert!(e.contains("32TiB") && e.contains("maximum 16TiB"), "{e}");
    }

    #[test]
    fn scale_run_times_boot_within_the_run() {
        let sc = Scenario::from_toml(
            "duration=\"200ms\"\n[machine]\nmemory=\"256MiB\"\ncpus=1\n\
             [[task]]\nname=\"t\"\nprogram=[{ op = \"touch\", size = \"16MiB\" }]\n",
        )
        .unwrap();
        let r = scale_run(&sc);
        assert!(r.boot_seconds > 0.0 && r.boot_seconds <= r.wall_seconds);
        assert!(r.simulated_seconds > 0.0);
        assert_eq!(r.memory_bytes, 256 << 20);
    }
}
