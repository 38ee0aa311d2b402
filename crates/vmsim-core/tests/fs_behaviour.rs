//! Files on ext4 in whole runs: the journal commits, per-repetition file names,
//! `until_exit`, `unlink_dir`, the xfs and bare switches and determinism.

use vmsim_core::config::Scenario;
use vmsim_core::RunResult;

fn scenario(text: &str) -> Scenario {
    Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

fn run(text: &str) -> RunResult {
    vmsim_core::run(&scenario(text), &mut |_, _| {})
}

/// A 1 GiB, 2-CPU machine on `fs` and these tasks.
fn machine(fs: &str, tasks: &str) -> String {
    format!(
        "duration = \"30s\"\n[machine]\nmemory = \"1GiB\"\ncpus = 2\n[kernel]\nfs = \"{fs}\"\n{tasks}"
    )
}

const WRITER: &str = r#"
[[task]]
name = "writer"
repeat = 50
program = [
    { op = "write", file = "w/f{rep}", size = "16KiB" },
    { op = "compute", time = "100ms" },
]
"#;

#[test]
fn each_repetition_creates_its_own_file_and_the_journal_commits() {
    let r = run(&machine("ext4", WRITER));
    let e = r.ext4.expect("an ext4 report");
    assert_eq!(e.creates, 50);
    assert_eq!(e.directories, 1);
    // 5 s run, 5 s commit interval: at least one commit with what the creates dirtied.
    assert!(e.journal_commits >= 1, "{e:?}");
    assert!(e.journal_blocks > e.journal_commits * 2, "{e:?}");
    // A directory leaf and a descriptor block unmovable; bitmaps and inode tables movable.
    assert!(e.blocks_unmovable >= 2 && e.blocks_movable >= 3, "{e:?}");
    // Every data page has its buffer_head: 50 files × 4 pages, plus the metadata.
    assert!(e.pages_with_buffers >= 200, "{e:?}");
    assert!(r.proc["slabinfo"].contains("jbd2_journal_head"));
    // Without the placeholder the program rewrites one file.
    let one = run(&machine("ext4", &WRITER.replace("f{rep}", "f")));
    assert_eq!(one.ext4.expect("an ext4 report").creates, 1);
}

#[test]
fn until_exit_repeats_until_the_named_tasks_have_exited_and_unlink_dir_empties_a_directory() {
    let churn = r#"
[[task]]
name = "churn"
until_exit = ["writer"]
program = [
    { op = "write", file = "c/f{rep}", size = "4KiB" },
    { op = "compute", time = "50ms" },
    { op = "unlink", file = "c/f{rep}" },
]

[[task]]
name = "cleaner"
start = "20s"
program = [{ op = "unlink_dir", dir = "w" }]
"#;
    let r = run(&machine("ext4", &format!("{WRITER}{churn}")));
    let writer = &r.tasks["writer"];
    let churner = &r.tasks["churn"];
    assert!(
        churner.mean_runtime_seconds >= writer.mean_runtime_seconds,
        "churn exits after the writer: {} < {}",
        churner.mean_runtime_seconds,
        writer.mean_runtime_seconds
    );
    let e = r.ext4.expect("an ext4 report");
    // The writer's 50 files, and churn's one a repetition, each of them unlinked.
    let churned = e.creates - 50;
    assert!(churned > 50, "churn repeated while the writer ran: {e:?}");
    assert_eq!(e.unlinks, churned + 50, "{e:?}");
    // Every inode and dentry is freed with its file.
    let slab = &r.proc["slabinfo"];
    for cache in ["dentry", "ext4_inode_cache"] {
        let line = slab.lines().find(|l| l.starts_with(cache)).unwrap();
        let active: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        assert_eq!(active, 0, "{line}");
    }
}

#[test]
fn bare_keeps_the_older_model_and_ext4_runs_are_deterministic() {
    let bare = run(&machine("bare", WRITER));
    assert!(bare.ext4.is_none() && bare.xfs.is_none());
    let a = serde_json::to_string(&run(&machine("ext4", WRITER))).unwrap();
    let b = serde_json::to_string(&run(&machine("ext4", WRITER))).unwrap();
    assert!(a == b, "two runs of the same ext4 scenario differ");
    assert_ne!(a, serde_json::to_string(&bare).unwrap());
}

#[test]
fn xfs_files_make_metadata_buffers_and_runs_are_deterministic() {
    let a = run(&machine("xfs", WRITER));
    let x = a.xfs.as_ref().expect("an xfs report");
    assert!(a.ext4.is_none());
    assert_eq!(x.creates, 50, "{x:?}");
    // 50 inodes fit one 64-inode chunk: two 16 KiB cluster buffers.
    assert_eq!(x.inode_chunks, 1, "{x:?}");
    assert!(x.buffer_pages_allocated >= 8, "{x:?}");
    let slab = &a.proc["slabinfo"];
    let active = |cache: &str| -> u64 {
        let line = slab.lines().find(|l| l.starts_with(cache)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    assert_eq!(active("xfs_ili"), 50, "{slab}");
    assert!(active("xfs_buf") >= 2, "{slab}");
    let b = run(&machine("xfs", WRITER));
    assert_eq!(
        serde_json::to_string(&a).unwrap(),
        serde_json::to_string(&b).unwrap(),
        "two runs of the same xfs scenario differ"
    );
}

/// The folio orders of the files a `fio_write` of four 256 KiB files left cached.
fn fio_folio_orders(bs: &str, kernel: &str) -> Vec<usize> {
    let text = format!(
        r#"duration = "30s"
[machine]
memory = "1GiB"
cpus = 2
[kernel]
{kernel}
[[task]]
name = "fio"
program = [{{ op = "fio_write", files = 4, file_size = "256KiB"{bs} }}]
"#
    );
    let sc = scenario(&text);
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(sc.duration.0);
    let k = &eng.kernel;
    let mut orders = Vec::new();
    for (name, &ino) in k.files.iter() {
        if !name.contains("workfile") {
            continue;
        }
        let mut i = 0;
        while i < k.inodes[ino as usize].size_pages {
            let p = k
                .filemap_get_folio(ino, i)
                .expect("a written page is cached");
            orders.push(k.mm.map[p as usize].order());
            i += k.mm.folio_nr_pages(p);
        }
    }
    orders
}

#[test]
fn fio_write_creates_folios_of_its_write_size() {
    // fio's blocksize=4096 (thpfioscale's job): a write(2) per page, order-0 folios.
    assert_eq!(fio_folio_orders("", ""), vec![0; 256]);
    // One write(2) of the whole 256 KiB file: one order-6 folio per file on 6.18...
    assert_eq!(fio_folio_orders(r#", bs = "256KiB""#, ""), vec![6; 4]);
    // ... and pages on a kernel without large page-cache folios.
    assert_eq!(
        fio_folio_orders(r#", bs = "256KiB""#, "version = \"6.1\""),
        vec![0; 256]
    );
}

/// The ext4 inode and dentry objects left on the shrinkers' lists after `program`.
fn unused_inodes_and_dentries(program: &str) -> (usize, usize) {
    let text = format!(
        "duration = \"60s\"\n[machine]\nmemory = \"1GiB\"\ncpus = 2\n[[task]]\nname = \"t\"\nprogram = [{program}]\n"
    );
    let sc = scenario(&text);
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(sc.duration.0);
    let caches = &eng.kernel.slab.caches;
    let inodes = caches[vmsim_core::mm::slab::EXT4_INODE_CACHE].lru.len();
    (inodes, caches[vmsim_core::mm::slab::DENTRY].lru.len())
}

#[test]
fn an_inode_with_page_cache_is_off_the_shrinkers_list() {
    let write = r#"{ op = "write", file = "d/f", size = "4KiB" }"#;
    // Its dentry is unused and shrinkable; the inode is not while its page is cached
    // (mapping_shrinkable) ...
    let (inodes, dentries) = unused_inodes_and_dentries(write);
    assert_eq!(inodes, 0);
    assert!(dentries >= 1);
    // ... and goes on the list when the page, written back, is dropped (inode_add_lru).
    let (inodes, _) = unused_inodes_and_dentries(&format!(
        r#"{write}, {{ op = "sleep", time = "40s" }}, {{ op = "drop_caches", value = 1 }}"#
    ));
    assert_eq!(inodes, 1);
}

/// The fidelity experiment tiny-memcg as `vmsim fidelity` runs it against this project's
/// 6.18 recording (dd of 64 MiB into a 32 MiB v1 group and back; the recorded machine's
/// other memory as `rest-of-system`), on its virtual disk with writeback throttling and
/// shared service.
const TINY_MEMCG: &str = r#"
duration = "60s"
cgroup = [
    { path = "fidelity", limit_in_bytes = 33554432 },
]
file = [
    { name = "rest-of-system/active", size = 32276480 },
    { name = "rest-of-system/inactive", size = 32743424 },
]

[machine]
memory = "24572MiB"
cpus = 2
nodes = 1
swap = "0"
mixed_free_lists = true

[kernel]
name = "linux-6.18.44"
version = "6.18"
min_free_kbytes = 67584
watermark_scale_factor = 10
watermark_boost_factor = 15000
swappiness = 60
dirty_ratio = 20
dirty_background_ratio = 10
dirty_expire_centisecs = 3000
dirty_writeback_centisecs = 500
extfrag_threshold = 500
compaction_proactiveness = 20
vfs_cache_pressure = 100
page_cluster = 3
thp_enabled = "madvise"
thp_defrag = "madvise"

[disk]
name = "vda"
read_bandwidth = 1316095578
write_bandwidth = 1738093549
latency = 0
request_latency = 64454
nr_requests = 256
max_sectors_kb = 4096
rotational = true
read_ahead_kb = 8192
wbt_lat_usec = 75000
queue_depth = 128
write_cache = true

[sampling]
interval = "1s"

[[task]]
name = "dd"
program = [
    { op = "wait", name = "system-up" },
    { op = "signal", name = "done--1" },
    { op = "wait", name = "done--1", count = 1 },
    { op = "snapshot", name = "start" },
    { op = "signal", name = "read--1" },
    { op = "write", file = "data", size = 67108864, bs = 1048576 },
    { op = "signal", name = "done-0" },
    { op = "wait", name = "done-0", count = 1 },
    { op = "snapshot", name = "write" },
    { op = "signal", name = "read-0" },
    { op = "read", file = "data", bs = 1048576 },
    { op = "signal", name = "done-1" },
    { op = "wait", name = "done-1", count = 1 },
    { op = "snapshot", name = "read" },
    { op = "signal", name = "read-1" },
]
cgroup = "fidelity"

[[task]]
name = "rest-of-system"
program = [
    { op = "touch", size = 65339392 },
    { op = "read", file = "rest-of-system/active", bs = 1048576 },
    { op = "read", file = "rest-of-system/active", bs = 1048576 },
    { op = "read", file = "rest-of-system/inactive", bs = 1048576 },
    { op = "slab", cache = "dentry", objects = 22218, in_use = true },
    { op = "slab", cache = "kmalloc-256", objects = 82416, in_use = true },
    { op = "alloc", order = 0, count = 23058, type = "unmovable" },
    { op = "signal", name = "system-up" },
    { op = "wait", name = "never" },
]
daemon = true
"#;

#[test]
fn a_memcg_dd_on_a_throttled_shared_disk_runs_to_the_end_and_repeats_itself() {
    // Writeback throttling holds writes back and shared service re-projects every
    // completion when a request arrives: the run must still finish, read the whole file
    // back through readahead, and give the same result twice.
    let a = run(TINY_MEMCG);
    assert!(a.summary.completed);
    // pgpgin is in KiB: the 64 MiB file and a few metadata blocks.
    assert!(a.vmstat_delta["pgpgin"] >= 64 << 10);
    assert!(
        a.vmstat_delta["pgsteal_file"] > 0,
        "the 32 MiB group reclaims"
    );
    let b = run(TINY_MEMCG);
    assert_eq!(a.vmstat, b.vmstat);
    assert_eq!(a.summary.elapsed_seconds, b.summary.elapsed_seconds);
}

/// A task writes 64 MiB (under the background threshold of a 1 GiB machine, so nothing
/// starts writeback by itself), snapshots, runs `sync` if asked, and snapshots again.
fn sync_run(fs: &str, sync: bool) -> RunResult {
    sync_run_with(fs, "", sync)
}

/// [`sync_run`] with more `[kernel]` keys.
fn sync_run_with(fs: &str, kernel: &str, sync: bool) -> RunResult {
    let sync_op = if sync { "{ op = \"sync\" }," } else { "" };
    run(&machine(
        fs,
        &format!(
            "{kernel}[[task]]\nname = \"w\"\nprogram = [\n  {{ op = \"write\", file = \"d/a\", size = \"64MiB\" }},\n  \
             {{ op = \"snapshot\", name = \"written\" }},\n  {sync_op}\n  {{ op = \"snapshot\", name = \"after\" }},\n]\n"
        ),
    ))
}

#[test]
fn sync_writes_every_dirty_page_and_waits_for_it() {
    for fs in ["ext4", "xfs", "bare"] {
        let plain = sync_run(fs, false);
        let synced = sync_run(fs, true);
        let (w, a) = (&synced.snapshots[0], &synced.snapshots[1]);
        assert!(
            w.vmstat["nr_dirty"] >= 16384,
            "{fs}: {}",
            w.vmstat["nr_dirty"]
        );
        // After sync(2) returns nothing is dirty or under writeback (ext4's metadata too).
        assert_eq!(a.vmstat["nr_dirty"], 0, "{fs}");
        assert_eq!(a.vmstat["nr_writeback"], 0, "{fs}");
        assert!(
            a.vmstat["nr_written"] - w.vmstat["nr_written"] >= 16384,
            "{fs}"
        );
        // Writing 64 MiB to the disk takes time the task spends asleep in sync(2).
        assert!(
            a.time_seconds - w.time_seconds > 0.05,
            "{fs}: {} s",
            a.time_seconds - w.time_seconds
        );
        // Without it the pages are still dirty at the second snapshot, read at once.
        assert!(plain.snapshots[1].vmstat["nr_dirty"] >= 16384, "{fs}");
        assert!(plain.snapshots[1].time_seconds - plain.snapshots[0].time_seconds < 0.01);
    }
    // On ext4 the sync commits the journal before its 5 s timer would.
    let e = sync_run("ext4", true).ext4.expect("an ext4 report");
    assert!(e.journal_commits >= 1, "{e:?}");
    // Without a journal there is nothing to commit: the metadata dirtied in place is
    // written with the data, and nothing is left dirty either.
    let nj = sync_run_with("ext4", "ext4_journal = false\n", true);
    let (w, a) = (&nj.snapshots[0], &nj.snapshots[1]);
    assert!(w.vmstat["nr_dirty"] > 16384, "{}", w.vmstat["nr_dirty"]);
    assert_eq!(a.vmstat["nr_dirty"], 0);
    assert_eq!(a.vmstat["nr_writeback"], 0);
    let e = nj.ext4.expect("an ext4 report");
    assert_eq!((e.journal_commits, e.journal_blocks), (0, 0), "{e:?}");
    let jh = nj.proc["slabinfo"]
        .lines()
        .find(|l| l.starts_with("jbd2_journal_head "))
        .expect("the cache's line");
    assert_eq!(
        jh.split_whitespace().nth(2),
        Some("0"),
        "no journal_head is ever allocated: {jh}"
    );
}

#[test]
fn sync_traces_the_flusher_work_it_queues() {
    use vmsim_core::trace::{EventFilter, TraceFormat};
    let text = machine(
        "ext4",
        "[[task]]\nname = \"w\"\nprogram = [ { op = \"write\", file = \"a\", size = \"8MiB\" }, { op = \"sync\" } ]\n",
    );
    let (_, tracer) = vmsim_core::sim::run_traced(
        &scenario(&text),
        Some((TraceFormat::Modern, EventFilter::default())),
        &mut |_, _| {},
    );
    let mut out = Vec::new();
    tracer.expect("a trace").write_to(&mut out).unwrap();
    let trace = String::from_utf8(out).unwrap();
    let queued: Vec<&str> = trace
        .lines()
        .filter(|l| l.contains(" writeback_queue: ") && l.contains("reason=sync"))
        .collect();
    // wakeup_flusher_threads(WB_REASON_SYNC), then sync_inodes_sb's WB_SYNC_ALL work.
    assert_eq!(queued.len(), 2, "{queued:?}");
    assert!(queued[0].contains("sync_mode=0"), "{}", queued[0]);
    assert!(queued[1].contains("sync_mode=1") && queued[1].contains("range_cyclic=0"));
    let execs = trace
        .lines()
        .filter(|l| l.contains(" writeback_exec: ") && l.contains("reason=sync"))
        .count();
    assert_eq!(execs, 2);
}

/// `nr_dirtied` and the data pages of a 512 MiB file written in 1 MiB write(2) calls on a
/// 512 MiB machine (dirty throttling all the way), on ext4 without a journal.
fn throttled_writer_dirtied(bs: &str) -> (u64, u64) {
    let r = run(&format!(
        r#"duration = "60s"
[machine]
memory = "512MiB"
cpus = 2
[kernel]
ext4_journal = false
[[task]]
name = "dd"
program = [{{ op = "write", file = "big", size = "512MiB", bs = "{bs}" }}]
"#
    ));
    (r.vmstat_delta["nr_dirtied"] as u64, 512 << 8)
}

#[test]
fn a_throttled_writer_dirties_each_folio_once() {
    // generic_perform_write() pauses in balance_dirty_pages_ratelimited() between folios:
    // the flusher never writes a folio the writer has half filled, so no page of the file
    // is dirtied twice (one folio dirtied again is 256 pages). Beyond the data, the
    // metadata blocks of the create and of each writeback pass's block allocation
    // (ext4_da_writepages: bitmaps, descriptors, the inode's extents): a few dozen.
    for bs in ["1MiB", "4KiB"] {
        let (dirtied, pages) = throttled_writer_dirtied(bs);
        assert!(
            (pages..pages + 128).contains(&dirtied),
            "bs {bs}: {dirtied} pages dirtied for {pages} written"
        );
    }
}
