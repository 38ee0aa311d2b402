//! Runs that always end and can be stopped: programs of operations that take no time
//! still move simulated time on (each system call costs at least `cost.syscall`), a run
//! stops when its caller says so, a wall-clock budget cuts it with a partial result,
//! the invariant checks run during a run and catch a broken LRU size, the trace
//! keeps a bounded number of lines, and a run that outgrows its host memory budget
//! stops with one line.

use std::time::{Duration, Instant};
use vmsim_core::config::Scenario;
use vmsim_core::sim::{run_controlled, Control, Stopped};

/// A 2-CPU, 256 MiB machine running `program` `repeat` times for `duration`.
fn scenario(duration: &str, repeat: &str, program: &str) -> Scenario {
    let text = format!(
        r#"
duration = "{duration}"
[machine]
memory = "256MiB"
cpus = 2
[[task]]
name = "t"
repeat = {repeat}
program = [{program}]
"#
    );
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"))
}

/// The zero-time operations of the hostile-input issue, each alone in a program repeated
/// 10^12 times (the maximum of repeat): the run reaches its time limit in bounded wall time, every operation
/// paid its system call.
#[test]
fn zero_time_operations_advance_simulated_time() {
    let ops = [
        r#"{op = "signal", name = "x"}"#,
        r#"{op = "free"}"#,
        r#"{op = "sleep", time = "0s"}"#,
        r#"{op = "madvise", advice = "hugepage"}"#,
        r#"{op = "unlink", file = "nobody-wrote-it"}"#,
        r#"{op = "wait", name = "never", count = 0}"#,
        r#"{op = "slab_free", cache = "dentry"}"#,
    ];
    for op in ops {
        let sc = scenario("100ms", "1000000000000", op);
        let wall = Instant::now();
        let r = vmsim_core::sim::run(&sc, &mut |_, _| {});
        assert!(!r.summary.completed, "{op}");
        assert_eq!(r.summary.elapsed_seconds, 0.1, "{op}");
        // One task on one CPU, busy in the kernel the whole time: ~100 ms of system
        // time, cost.syscall (150 ns) per operation.
        assert!(
            (0.09..=0.101).contains(&r.summary.sys_seconds),
            "{op}: sys {}",
            r.summary.sys_seconds
        );
        assert!(
            wall.elapsed() < Duration::from_secs(20),
            "{op}: {:?}",
            wall.elapsed()
        );
    }
}

/// `compute 0s` is no work, so a program of nothing else does nothing, however often:
/// it runs once and the task exits at once.
#[test]
fn a_program_of_empty_operations_runs_once() {
    let sc = scenario(
        "10s",
        "1000000000000",
        r#"{op = "compute", time = "0s"}, {op = "touch", size = "0B"}"#,
    );
    let r = vmsim_core::sim::run(&sc, &mut |_, _| {});
    assert!(r.summary.completed);
    assert!(
        r.summary.elapsed_seconds < 0.001,
        "{}",
        r.summary.elapsed_seconds
    );
}

/// The floor binds only where a step's operations took no time at all: a program with
/// real kernel work in each step is charged what the work costs, no more.
#[test]
fn the_syscall_floor_charges_only_steps_that_took_no_time() {
    let program = r#"{op = "alloc", order = 0, count = 64, type = "unmovable"}, {op = "free"}"#;
    let with = scenario("1s", "2000", program);
    let mut without = with.clone();
    without.cost.syscall = 0;
    let a = vmsim_core::sim::run(&with, &mut |_, _| {});
    let b = vmsim_core::sim::run(&without, &mut |_, _| {});
    assert!(a.summary.completed && b.summary.completed);
    assert_eq!(a.summary.sys_seconds, b.summary.sys_seconds);
    // With only cheap operations it is what sets the pace: a step ends when its signals
    // reach the 50 us quantum at cost.syscall each and is charged them; the last step,
    // which ends the task, moves it on by itself and is not.
    let cheap = scenario("1s", "1000", r#"{op = "signal", name = "x"}"#);
    let mut free = cheap.clone();
    free.cost.syscall = 0;
    let a = vmsim_core::sim::run(&cheap, &mut |_, _| {});
    let b = vmsim_core::sim::run(&free, &mut |_, _| {});
    assert!(a.summary.completed && b.summary.completed);
    let extra_ns = ((a.summary.sys_seconds - b.summary.sys_seconds) * 1e9).round();
    let per = cheap.cost.syscall as f64;
    assert_eq!(extra_ns % per, 0.0, "{extra_ns}");
    assert!(
        (600.0 * per..=1000.0 * per).contains(&extra_ns),
        "{extra_ns}"
    );
}

/// Same scenario and seed, same bytes, for a program of zero-time operations too.
#[test]
fn zero_time_programs_are_deterministic() {
    let sc = scenario(
        "50ms",
        "1000000000000",
        r#"{op = "signal", name = "x"}, {op = "free"}"#,
    );
    let a = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
    let b = serde_json::to_string(&vmsim_core::sim::run(&sc, &mut |_, _| {})).unwrap();
    assert_eq!(a, b);
}

/// A long run the caller interrupts after a few looks: it stops at once, without a result.
/// The frame table and page tables grow as a task first uses memory: a budget smaller than
/// that growth stops the run with one line, a larger one changes nothing.
#[test]
fn a_run_that_outgrows_its_host_budget_stops_with_one_line() {
    let sc = scenario("1s", "1", r#"{ op = "touch", size = "128MiB" }"#);
    let budget = |bytes: u64| {
        Some(vmsim_core::capacity::Budget {
            limit: vmsim_core::capacity::HostLimit {
                bytes: bytes + 1_000_000,
                what: "available",
            },
            at_start: 1_000_000,
            memory: "256MiB".into(),
        })
    };
    let mut progress = |_, _| {};
    let mut ctl = Control::new(&mut progress);
    ctl.budget = budget(100_000);
    match run_controlled(&sc, None, &mut ctl) {
        Err(Stopped::HostMemory { at_ns, message }) => {
            assert!(at_ns < 1_000_000_000, "{at_ns}");
            assert!(
                message.contains("had grown by") && !message.contains('\n'),
                "{message}"
            );
            assert!(
                message.ends_with(
                    "machine.memory = 256MiB with this workload is more than it can simulate"
                ),
                "{message}"
            );
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    // 128 MiB touched: 32,768 frames (512 KiB of frame table) and their page-table slots.
    let mut progress = |_, _| {};
    let mut ctl = Control::new(&mut progress);
    ctl.budget = budget(16 << 20);
    let (r, _) = run_controlled(&sc, None, &mut ctl).unwrap();
    let (plain, _) = run_controlled(&sc, None, &mut Control::new(&mut |_, _| {})).unwrap();
    assert_eq!(
        serde_json::to_string(&r).unwrap(),
        serde_json::to_string(&plain).unwrap()
    );
}

/// Without the pageblock map a result is the same but for the map.
#[test]
fn a_run_without_its_pageblock_map_differs_only_there() {
    let sc = scenario("1s", "1", r#"{ op = "touch", size = "64MiB" }"#);
    let mut progress = |_, _| {};
    let mut ctl = Control::new(&mut progress);
    ctl.pageblock_map = false;
    let (mut without, _) = run_controlled(&sc, None, &mut ctl).unwrap();
    let (mut with, _) = run_controlled(&sc, None, &mut Control::new(&mut |_, _| {})).unwrap();
    assert!(without.pageblocks.is_empty());
    assert!(with.pageblocks.iter().map(|z| z.free.len()).sum::<usize>() >= 128);
    with.pageblocks.clear();
    without.pageblocks.clear();
    assert_eq!(
        serde_json::to_string(&with).unwrap(),
        serde_json::to_string(&without).unwrap()
    );
}

#[test]
fn an_interrupted_run_stops_without_a_result() {
    let sc = scenario("1000s", "1000000000000", r#"{op = "signal", name = "x"}"#);
    let mut looks = 0;
    let mut interrupted = || {
        looks += 1;
        looks > 3
    };
    let mut progress = |_, _| {};
    let mut ctl = Control::new(&mut progress);
    ctl.interrupted = Some(&mut interrupted);
    let wall = Instant::now();
    match run_controlled(&sc, None, &mut ctl) {
        Err(Stopped::Interrupted { at_ns }) => assert!(at_ns < 1_000_000_000, "{at_ns}"),
        other => panic!("{:?}", other.map(|(r, _)| r.summary)),
    }
    assert!(wall.elapsed() < Duration::from_secs(5));
}

/// A wall-clock budget cuts the run: the partial result ends at the cut, says so, and
/// its last sample is the state at the cut.
#[test]
fn a_wall_clock_budget_cuts_the_run_with_a_partial_result() {
    let sc = scenario("10000s", "1000000000000", r#"{op = "signal", name = "x"}"#);
    let mut progress = |_, _| {};
    let mut ctl = Control::new(&mut progress);
    ctl.max_wall = Some(Duration::from_millis(300));
    let wall = Instant::now();
    let (r, _) = run_controlled(&sc, None, &mut ctl).expect("a cut run has a result");
    assert!(
        wall.elapsed() < Duration::from_secs(5),
        "{:?}",
        wall.elapsed()
    );
    let cut = r.cut.expect("the result says it was cut");
    assert!(
        cut.reason.contains("wall-clock budget of 0.3 s"),
        "{}",
        cut.reason
    );
    assert!(cut.at_seconds > 0.0 && cut.at_seconds < 10000.0);
    assert!(!r.summary.completed);
    assert_eq!(r.summary.elapsed_seconds, cut.at_seconds);
    assert_eq!(r.timeseries.time_seconds.last(), Some(&cut.at_seconds));
}

/// Checks at every sample pass on a healthy run, and a broken LRU size is caught and
/// named with the simulated time.
#[test]
fn invariant_checks_run_during_a_run_and_catch_a_broken_lru_size() {
    let sc = scenario(
        "2s",
        "3",
        r#"{op = "touch", size = "64MiB"}, {op = "write", file = "f", size = "16MiB"}, {op = "read", file = "f"}, {op = "unmap", size = "32MiB"}"#,
    );
    let mut progress = |_, _| {};
    let mut ctl = Control::new(&mut progress);
    ctl.check_invariants = true;
    run_controlled(&sc, None, &mut ctl).expect("a healthy run keeps its invariants");

    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(500_000_000);
    eng.kernel.check_accounting().expect("healthy");
    eng.kernel.mm.nodes[0].lruvec.nr[0] += 1;
    let e = eng.kernel.check_accounting().unwrap_err();
    assert!(e.contains("LRU list 0 of node 0 memcg 0: size"), "{e}");
    let err = Stopped::Invariant {
        at_ns: 500_000_000,
        what: e,
    };
    assert!(err
        .to_string()
        .starts_with("invariant broken at simulated time 0.500 s: LRU list 0"));
}

/// A page on an LRU list that is not PageLRU, and a counter off by one, are named.
#[test]
fn check_lru_names_a_page_and_a_counter() {
    use vmsim_core::mm::mmzone::lru;
    use vmsim_core::mm::page::pg;
    use vmsim_core::mm::vmstat::NodeStat;
    let sc = scenario(
        "1s",
        "1",
        r#"{op = "touch", size = "8MiB"}, {op = "sleep", time = "10s"}"#,
    );
    let mut eng = vmsim_core::sim::build(&sc);
    eng.run_until(100_000_000);
    eng.kernel.mm.check_lru().expect("healthy");
    let p = eng.kernel.mm.nodes[0].lruvec.lists[lru::INACTIVE_ANON]
        .iter(&eng.kernel.mm.map)
        .next()
        .expect("anon pages on the inactive list");
    eng.kernel.mm.map[p as usize].flags &= !pg::LRU;
    let e = eng.kernel.mm.check_lru().unwrap_err();
    assert!(
        e.contains(&format!("pfn {p}")) && e.contains("not PageLRU"),
        "{e}"
    );
    eng.kernel.mm.map[p as usize].flags |= pg::LRU;
    eng.kernel.mm.nodes[0].vm_stat[NodeStat::NR_ACTIVE_FILE as usize] += 1;
    let e = eng.kernel.mm.check_lru().unwrap_err();
    assert!(e.contains("nr_active_file"), "{e}");
}

/// A sampling interval that would build more than MAX_SAMPLES samples is refused in one line.
#[test]
fn too_many_samples_are_refused() {
    let text = "duration = \"100000s\"\n[sampling]\ninterval = \"1ms\"\n";
    let e = Scenario::from_toml(text).unwrap_err().to_string();
    assert!(
        e.contains("needs 100000001 samples; the maximum is 200000"),
        "{e}"
    );
    assert!(!e.contains('\n'));
}
