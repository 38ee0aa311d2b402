//! Swap in whole runs: the swap cache keeps a page read back, so reclaim frees it again
//! without a write while a written page is written again; swap readahead serves
//! sequential re-reads and backs off on random ones; the v1 memsw limit holds (reclaim
//! without swap, then the memcg OOM); v2's memory.swap.max stops swap-out; the swap
//! charges balance; runs with swap are deterministic.
//!
//! Machines are small with one CPU and a fast disk, so each run takes milliseconds.

use vmsim_core::config::Scenario;
use vmsim_core::RunResult;

/// A one-CPU machine with 1 GiB of RAM and 512 MiB of swap on a disk that is
/// `rotational` or not; `rest` (cgroups and tasks) is appended.
fn scenario(rotational: bool, rest: &str) -> Scenario {
    let text = format!(
        r#"
duration = "120s"
[machine]
memory = "1GiB"
cpus = 1
swap = "512MiB"
[sampling]
interval = "60s"
[disk]
latency = 50000
read_bandwidth = 1000000000
write_bandwidth = 1000000000
rotational = {rotational}
{rest}
"#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// Runs to the end, checking the memcg and swap charges every half second.
fn run_checked(sc: &Scenario) -> RunResult {
    let mut eng = vmsim_core::sim::build(sc);
    let mut t = 0;
    while eng.live_user_tasks > 0 && t < sc.duration.0 {
        t += 500_000_000;
        eng.run_until(t);
        eng.kernel
            .check_memcg()
            .unwrap_or_else(|e| panic!("at {t} ns: {e}"));
    }
    vmsim_core::sim::run(sc, &mut |_, _| {})
}

fn ev(r: &RunResult, name: &str) -> i64 {
    r.vmstat_delta.get(name).copied().unwrap_or(0)
}

/// A 64 MiB v1 group whose task writes 128 MiB, then touches it twice more with `retouch`.
fn cycle(retouch: &str, group: &str) -> String {
    format!(
        r#"
[[cgroup]]
path = "A"
limit_in_bytes = "64MiB"
{group}
[[task]]
name = "hog"
cgroup = "A"
program = [
  {{ op = "touch", size = "128MiB" }},
  {{ op = "touch", size = "128MiB", {retouch} }},
  {{ op = "touch", size = "128MiB", {retouch} }},
]
"#
    )
}

const PAGES_128M: i64 = 128 << 8;

#[test]
fn a_page_read_back_is_reclaimed_again_without_a_write_a_written_one_is_written() {
    let read = run_checked(&scenario(false, &cycle("write = false", "")));
    let written = run_checked(&scenario(false, &cycle("write = true", "")));
    // Read back: only the first 128 MiB ever goes out (half in the first pass, the
    // dirty rest when the read passes push it out); the re-reads find their slots.
    assert!(
        ev(&read, "pswpout") <= PAGES_128M + 256,
        "pswpout {}",
        ev(&read, "pswpout")
    );
    assert!(ev(&read, "pswpin") >= PAGES_128M, "{}", ev(&read, "pswpin"));
    // Written: each pass writes the group's pages out again.
    assert!(
        ev(&written, "pswpout") >= 2 * PAGES_128M,
        "pswpout {}",
        ev(&written, "pswpout")
    );
    let r = &read.memcg.as_ref().unwrap().groups["A"];
    // Every charge went with the task but what the one CPU's charge stock holds (the
    // page tables' and buffer_heads' pages returned there): no slot stays charged.
    assert_eq!(r.memsw_usage_in_bytes, Some(r.usage_in_bytes), "{r:?}");
    assert!(r.usage_in_bytes <= 64 << 12, "{r:?}");
}

#[test]
fn sequential_rereads_come_from_readahead_random_ones_shrink_the_window() {
    for rotational in [false, true] {
        let seq = run_checked(&scenario(rotational, &cycle("write = false", "")));
        let (pswpin, hits, major) = (
            ev(&seq, "pswpin"),
            ev(&seq, "swap_ra_hit"),
            ev(&seq, "pgmajfault"),
        );
        assert!(
            hits * 10 >= pswpin * 7,
            "rotational {rotational}: {hits} hits of {pswpin} swap-ins"
        );
        assert!(
            major * 4 <= pswpin,
            "rotational {rotational}: {major} major faults of {pswpin} swap-ins"
        );
        assert!(ev(&seq, "swap_ra") >= hits);
        let rnd = run_checked(&scenario(
            rotational,
            &cycle("write = false, order = \"random\"", ""),
        ));
        let (pswpin, hits, major) = (
            ev(&rnd, "pswpin"),
            ev(&rnd, "swap_ra_hit"),
            ev(&rnd, "pgmajfault"),
        );
        assert!(
            hits * 4 <= pswpin,
            "rotational {rotational}: random {hits} hits of {pswpin}"
        );
        assert!(
            major * 2 >= pswpin,
            "rotational {rotational}: random {major} major faults of {pswpin}"
        );
    }
}

#[test]
fn the_memsw_limit_holds_reclaim_cannot_swap_and_the_group_ooms() {
    let tight = run_checked(&scenario(
        false,
        &cycle("write = true", "memsw.limit_in_bytes = \"96MiB\""),
    ));
    let g = &tight.memcg.as_ref().unwrap().groups["A"];
    assert_eq!(tight.summary.oom_kills, 1);
    assert!(g.memsw_max_usage_in_bytes.unwrap() <= 96 << 20);
    // 6.18 counts failcnt on v1's memory counter only (memory.track_failcnt).
    assert_eq!(g.memsw_failcnt, Some(0));
    // Nothing but the charge stock's pages (at most a batch) stays charged.
    assert!(g.memsw_usage_in_bytes.unwrap() <= 64 << 12);
    // 6.1's page_counter_try_charge counts it on every counter.
    let mut old = scenario(
        false,
        &cycle("write = true", "memsw.limit_in_bytes = \"96MiB\""),
    );
    old.kernel.memsw_failcnt = Some(true);
    let r = run_checked(&old);
    assert!(r.memcg.as_ref().unwrap().groups["A"].memsw_failcnt.unwrap() > 0);
    let roomy = run_checked(&scenario(
        false,
        &cycle("write = true", "memsw.limit_in_bytes = \"256MiB\""),
    ));
    assert_eq!(roomy.summary.oom_kills, 0);
    let g = &roomy.memcg.as_ref().unwrap().groups["A"];
    assert!(g.memsw_max_usage_in_bytes.unwrap() > 96 << 20);
    assert_eq!(g.memsw_failcnt, Some(0));
}

#[test]
fn v2_swap_max_zero_keeps_anon_in_memory_and_the_group_ooms() {
    let rest = r#"
[[cgroup]]
path = "A"
hierarchy = "v2"
max = "64MiB"
swap.max = "0"
[[task]]
name = "hog"
cgroup = "A"
program = [ { op = "touch", size = "128MiB" } ]
"#;
    let r = run_checked(&scenario(false, rest));
    assert_eq!(ev(&r, "pswpout"), 0);
    assert_eq!(r.summary.oom_kills, 1);
    let rest = rest.replace("swap.max = \"0\"", "swap.max = \"512MiB\"");
    let r = run_checked(&scenario(false, &rest));
    assert!(ev(&r, "pswpout") > 0);
    assert_eq!(r.summary.oom_kills, 0);
}

#[test]
fn runs_with_swap_and_readahead_are_deterministic() {
    let sc = scenario(true, &cycle("write = false, order = \"random\"", ""));
    let a = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
    let b = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
    assert_eq!(a, b);
}

// ---------------------------------------------------------------------------
// swap devices: priorities, swapoff

/// A one-CPU 256 MiB machine with the `[[swap]]` devices `swaps` and a hog that
/// writes 320 MiB and keeps it while `root` sleeps `at`, then swaps `path` off.
fn devices_scenario(swaps: &str, path: &str, at: &str, cpus: u32, rotational: bool) -> Scenario {
    let text = format!(
        r#"
duration = "60s"
[machine]
memory = "256MiB"
cpus = {cpus}
[sampling]
interval = "60s"
[disk]
latency = 50000
read_bandwidth = 1000000000
write_bandwidth = 1000000000
rotational = {rotational}
{swaps}
[[task]]
name = "hog"
program = [
  {{ op = "touch", size = "320MiB" }},
  {{ op = "sleep", time = "20s" }},
]
[[task]]
name = "root"
program = [
  {{ op = "sleep", time = "{at}" }},
  {{ op = "swapoff", path = "{path}" }},
]
"#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

const TWO_DEVICES: &str = r#"
[[swap]]
path = "/dev/sdb2"
type = "partition"
size = "64MiB"
priority = 5
[[swap]]
path = "/swapfile"
type = "file"
size = "512MiB"
"#;

fn tid_of(eng: &vmsim_core::kernel::Engine, comm: &str) -> usize {
    eng.kernel
        .tasks
        .iter()
        .position(|t| t.comm == comm)
        .unwrap()
}

#[test]
fn the_higher_priority_device_fills_first_and_swapoff_brings_its_pages_back() {
    let sc = devices_scenario(TWO_DEVICES, "/dev/sdb2", "10s", 1, true);
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(9_900_000_000);
    let hog = tid_of(&eng, "hog");
    let (hi, lo) = (&eng.kernel.swap.devices[0], &eng.kernel.swap.devices[1]);
    assert_eq!((hi.prio, lo.prio), (5, -2));
    assert_eq!(hi.inuse_pages, hi.pages, "priority 5 is used until full");
    assert!(lo.inuse_pages > 0, "then the automatic priority -2");
    let on_hi = hi.inuse_pages as i64;
    let pswpin0 = eng.kernel.mm.events[vmsim_core::mm::vmstat::Event::PSWPIN as usize];
    let mut t = 9_900_000_000;
    while eng.kernel.tasks[tid_of(&eng, "root")].alive {
        t += 100_000_000;
        eng.run_until(t);
        eng.kernel.check_accounting().unwrap();
        assert!(
            t < 19_000_000_000,
            "swapoff did not finish while the hog lives"
        );
    }
    let d = &eng.kernel.swap.devices[0];
    assert!(!d.writeok && d.inuse_pages == 0 && d.failed_calls == 0);
    assert_eq!(eng.kernel.swap.pages, eng.kernel.swap.devices[1].pages);
    let pswpin = eng.kernel.mm.events[vmsim_core::mm::vmstat::Event::PSWPIN as usize] - pswpin0;
    assert!(
        pswpin as i64 >= on_hi,
        "every page on the device was read: {pswpin} < {on_hi}"
    );
    let h = &eng.kernel.tasks[hog];
    assert!(h.alive && !h.oom_killed);
    assert_eq!(h.rss + h.swapents, 320 << 8, "no page of the hog was lost");
    assert!(eng.kernel.proc_swaps_has("/swapfile") && !eng.kernel.proc_swaps_has("/dev/sdb2"));
}

#[test]
fn swapoff_fails_and_the_device_stays_on_when_memory_cannot_hold_its_pages() {
    let one = r#"
[[swap]]
path = "/dev/sdb2"
type = "partition"
size = "512MiB"
"#;
    let sc = devices_scenario(one, "/dev/sdb2", "10s", 1, true);
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(19_000_000_000);
    let root = &eng.kernel.tasks[tid_of(&eng, "root")];
    assert!(
        root.oom_killed,
        "the swapoff caller is the OOM killer's first choice"
    );
    let h = &eng.kernel.tasks[tid_of(&eng, "hog")];
    assert!(h.alive && !h.oom_killed);
    assert_eq!(h.rss + h.swapents, 320 << 8);
    let d = &eng.kernel.swap.devices[0];
    assert!(d.writeok && d.failed_calls == 1 && d.inuse_pages > 0);
    assert_eq!(eng.kernel.swap.pages, d.pages, "its slots count again");
    eng.kernel.check_accounting().unwrap();
}

#[test]
fn runs_with_several_devices_and_swapoff_are_deterministic() {
    for rotational in [true, false] {
        let sc = devices_scenario(TWO_DEVICES, "/dev/sdb2", "4s", 2, rotational);
        let a = vmsim_core::sim::run(&sc, &mut |_, _| {});
        assert!(ev(&a, "pswpout") > 0 && ev(&a, "pswpin") > 0);
        let a = serde_json::to_string(&a).unwrap();
        let b = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
        assert!(
            a == b,
            "two runs with swap devices differ (rotational {rotational})"
        );
    }
}

const ZRAM: &str = r#"
[[swap]]
path = "/dev/zram0"
type = "zram"
disksize = "512MiB"
"#;

#[test]
fn zram_stores_compressed_pages_in_frames_taken_from_the_machine() {
    let sc = devices_scenario(ZRAM, "/dev/zram0", "30s", 1, true);
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(9_000_000_000);
    eng.kernel.check_accounting().unwrap();
    let d = &eng.kernel.swap.devices[0];
    let z = d.zram.as_ref().unwrap();
    let z = &z.pool;
    assert!(z.objects > 10_000, "{} pages stored", z.objects);
    let pswpout = eng.kernel.mm.events[vmsim_core::mm::vmstat::Event::PSWPOUT as usize];
    assert_eq!(
        pswpout, z.objects,
        "every page written once and stored (no failed write)"
    );
    // Two 1952-byte objects per 4 KiB frame at the default ratio of 2.106.
    assert_eq!(z.pages.len() as u64, z.objects.div_ceil(2));
    for &f in &z.pages {
        assert!(
            !eng.kernel.mm.map[f as usize].test(vmsim_core::mm::page::pg::BUDDY),
            "a pool frame is free in the buddy allocator"
        );
    }
    let f: Vec<u64> = d
        .zram
        .as_ref()
        .unwrap()
        .mm_stat()
        .split_whitespace()
        .map(|x| x.parse().unwrap())
        .collect();
    assert_eq!(f.len(), 9);
    assert_eq!(f[0], z.objects * 4096, "orig_data_size");
    assert_eq!(f[1], z.objects * 1952, "compr_data_size");
    assert_eq!(f[2], z.pages.len() as u64 * 4096, "mem_used_total");
    let h = &eng.kernel.tasks[tid_of(&eng, "hog")];
    assert_eq!(h.rss + h.swapents, 320 << 8);
    // The pool's memory is memory the task cannot have: more is swapped out than to a
    // partition of the same size on the same machine.
    let disk = r#"
[[swap]]
path = "/dev/sdb2"
type = "partition"
size = "512MiB"
"#;
    let a = vmsim_core::sim::run(
        &devices_scenario(ZRAM, "/dev/zram0", "30s", 1, true),
        &mut |_, _| {},
    );
    let b = vmsim_core::sim::run(
        &devices_scenario(disk, "/dev/sdb2", "30s", 1, true),
        &mut |_, _| {},
    );
    assert!(
        ev(&a, "pswpout") > ev(&b, "pswpout"),
        "zram {} disk {}",
        ev(&a, "pswpout"),
        ev(&b, "pswpout")
    );
    assert!(a.swap_devices[0].mm_stat.is_some() && b.swap_devices[0].mm_stat.is_none());
}

#[test]
fn runs_with_zram_are_deterministic() {
    for cpus in [1, 2] {
        let sc = devices_scenario(ZRAM, "/dev/zram0", "4s", cpus, false);
        let a = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
        let b = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
        assert!(a == b, "two runs with zram differ ({cpus} CPUs)");
    }
}

/// The 64 MiB group's cycle of [`cycle`] with zswap on and `kernel` keys added.
fn zswap_scenario(retouch: &str, kernel: &str) -> Scenario {
    let rest = format!("[kernel]\nzswap = true\n{kernel}\n{}", cycle(retouch, ""));
    scenario(false, &rest)
}

/// A two-CPU machine of 1 GiB whose task writes 1536 MiB twice, with zswap's pool at
/// most `percent` of RAM.
fn zswap_global(percent: u64) -> Scenario {
    let text = format!(
        r#"
duration = "60s"
[machine]
memory = "1GiB"
cpus = 2
swap = "2GiB"
[sampling]
interval = "60s"
[disk]
latency = 50000
read_bandwidth = 1000000000
write_bandwidth = 1000000000
rotational = false
[kernel]
zswap = true
zswap_max_pool_percent = {percent}
[[task]]
name = "hog"
program = [
  {{ op = "touch", size = "1536MiB" }},
  {{ op = "touch", size = "1536MiB" }},
]
"#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

#[test]
fn zswap_keeps_swapped_pages_in_memory_and_the_disk_sees_none() {
    let sc = zswap_scenario("write = false", "");
    let mut eng = vmsim_core::sim::build(&sc);
    // Into the first re-read pass: the group's first 64 MiB are in zswap.
    let mut t = 0;
    while eng.kernel.zswap.stored_pages() < 10_000 && t < 10_000_000_000 {
        t += 10_000_000;
        eng.run_until(t);
    }
    eng.kernel.check_accounting().unwrap();
    eng.kernel.check_memcg().unwrap();
    let k = &eng.kernel;
    let stored = k.zswap.stored_pages();
    assert!(stored >= 10_000, "{stored} pages stored");
    // Two 1952-byte objects per frame at lzo's 2.106; every frame held, none free.
    assert_eq!(k.zswap.pool.total_pages(), stored.div_ceil(2));
    for &f in &k.zswap.pool.pages {
        assert!(!k.mm.map[f as usize].test(vmsim_core::mm::page::pg::BUDDY));
    }
    // /proc/meminfo counts the pool and the pages it holds.
    let mi = k.meminfo();
    let line = |n: &str| {
        mi.lines()
            .find(|l| l.starts_with(&format!("{n}:")))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap()
    };
    assert_eq!(line("Zswap"), k.zswap.pool.total_pages() * 4);
    assert_eq!(line("Zswapped"), stored * 4);
    // Under cgroup v1 the compressed copies are not charged to the group
    // (obj_cgroup_charge_zswap returns unless the controller is on the default hierarchy).
    let g = k.mm.memcg.ext(1);
    assert_eq!((g.zswapped, g.zswap_b), (0, 0));
    drop(eng);
    let r = run_checked(&sc);
    // Every swap-out went to zswap and every swap-in came from it: no I/O at all.
    assert_eq!(ev(&r, "pswpout"), 0);
    assert_eq!(ev(&r, "pswpin"), 0);
    assert!(
        ev(&r, "zswpout") > PAGES_128M / 2,
        "zswpout {}",
        ev(&r, "zswpout")
    );
    // A load frees its entry and dirties the page (exclusive loads), so reclaiming a page
    // that was only read stores it again: each re-read pass stores again what it loads.
    assert!(
        ev(&r, "zswpin") >= PAGES_128M,
        "zswpin {}",
        ev(&r, "zswpin")
    );
    assert!(ev(&r, "zswpout") >= ev(&r, "zswpin"));
    // The task gone, its slots are freed and their entries with them.
    let z = r.zswap.as_ref().unwrap();
    assert_eq!((z.stored_pages, z.pool_total_size), (0, 0));
}

#[test]
fn a_full_zswap_pool_sends_pages_to_the_disk_and_its_worker_writes_entries_back() {
    // A pool of at most 1 % of RAM (2,600 frames).
    let sc = zswap_global(1);
    let mut eng = vmsim_core::sim::build(&sc);
    let max = eng
        .kernel
        .mm
        .zones
        .iter()
        .map(|z| z.managed_pages)
        .sum::<u64>()
        / 100;
    let mut t = 0;
    while eng.live_user_tasks > 0 && t < sc.duration.0 {
        t += 50_000_000;
        eng.run_until(t);
        // The limit is checked before each store: it is passed by one frame at most.
        assert!(eng.kernel.zswap.pool.total_pages() <= max + 1);
    }
    let z = eng.kernel.zswap.debugfs();
    assert!(z.pool_limit_hit > 0);
    let e = |n: vmsim_core::mm::vmstat::Event| eng.kernel.mm.events[n as usize];
    use vmsim_core::mm::vmstat::Event;
    // Refused stores went to the disk.
    assert!(e(Event::PSWPOUT) > 0 && e(Event::ZSWPOUT) > 0);
    // The worker wrote entries back, each counted once in debugfs and vmstat, and written
    // to the disk.
    assert!(z.written_back_pages > 0, "{z:?}");
    assert_eq!(z.written_back_pages, e(Event::ZSWPWB));
    assert!(e(Event::PSWPOUT) >= e(Event::ZSWPWB));
    eng.kernel.check_accounting().unwrap();
}

#[test]
fn zswap_is_off_by_default_and_runs_with_it_are_deterministic() {
    let off = run_checked(&scenario(false, &cycle("write = false", "")));
    assert!(off.zswap.is_none());
    assert_eq!(ev(&off, "zswpout"), 0);
    let sc = zswap_scenario("write = true", "zswap_max_pool_percent = 2");
    let a = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
    let b = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
    assert!(a == b, "two runs with zswap differ");
}

#[test]
fn a_zram_fault_reads_its_page_alone_and_frees_the_slot() {
    // The 256 MiB machine writes 320 MiB to zram, then reads it all back.
    let text = format!(
        r#"
duration = "60s"
[machine]
memory = "256MiB"
cpus = 1
[sampling]
interval = "60s"
{ZRAM}
[[task]]
name = "hog"
program = [
  {{ op = "touch", size = "320MiB" }},
  {{ op = "touch", size = "320MiB", write = false }},
]
"#
    );
    let r = run_checked(&Scenario::from_toml(&text).unwrap());
    // SWP_SYNCHRONOUS_IO: no readahead and no swap cache; every swap-in is a major fault.
    assert!(ev(&r, "pswpin") > 10_000, "pswpin {}", ev(&r, "pswpin"));
    assert_eq!(ev(&r, "pgmajfault"), ev(&r, "pswpin"));
    assert_eq!(ev(&r, "swap_ra"), 0);
    // The slot is freed at the fault, so a page read back and reclaimed again is
    // written again: nothing was kept in the swap cache to spare the write.
    assert!(ev(&r, "pswpout") >= ev(&r, "pswpin"));
    let snap = vmsim_core::sim::run(&Scenario::from_toml(&text).unwrap(), &mut |_, _| {});
    assert_eq!(
        serde_json::to_string(&snap).unwrap(),
        serde_json::to_string(&r).unwrap()
    );
}

#[test]
fn under_cgroup_v2_zswap_charges_the_compressed_copies_to_the_group() {
    let rest = r#"
[kernel]
zswap = true
[[cgroup]]
path = "A"
hierarchy = "v2"
max = "64MiB"
[[task]]
name = "hog"
cgroup = "A"
program = [
  { op = "touch", size = "128MiB" },
  { op = "touch", size = "128MiB", write = false },
]
"#;
    let sc = scenario(false, rest);
    let mut eng = vmsim_core::sim::build(&sc);
    let mut t = 0;
    while eng.kernel.zswap.stored_pages() < 10_000 && t < 10_000_000_000 {
        t += 10_000_000;
        eng.run_until(t);
    }
    let k = &eng.kernel;
    k.check_memcg().unwrap();
    let stored = k.zswap.stored_pages();
    assert!(stored >= 10_000, "{stored} pages stored");
    // Charged by their length (4096 / 2.106 rounded up: 1945 bytes), not their size
    // class, as kernel memory forced over the limit.
    let g = k.mm.memcg.ext(1);
    assert_eq!(g.zswapped, stored);
    assert_eq!(g.zswap_b, stored * 1945);
    assert!(
        g.kmem.usage * 4096 >= g.zswap_b,
        "kmem {} pages",
        g.kmem.usage
    );
    // memory.stat shows them.
    let ms = k.mm.memcg.memory_stat(1, &k.mm.nodes);
    assert_eq!(ms.stat["zswap"], stored * 1945);
    assert_eq!(ms.stat["zswapped"], stored * 4096);
}
