//! Free and reserved MAX_PAGE_ORDER blocks whose frames are written only when first used
//! or read (`mm/deferred.rs`): a run is the same, to the byte, whether every block was
//! written at boot or on demand.

use vmsim_core::config::Scenario;
use vmsim_core::sim::{build, run_built, Control, RunResult};

/// Runs `sc`, with every untouched block (free or reserved) written right after boot when
/// `all_at_boot`.
fn run(sc: &Scenario, all_at_boot: bool) -> RunResult {
    let mut eng = build(sc);
    if all_at_boot {
        eng.kernel.mm.init_untouched_all();
    }
    let mut progress = |_: u64, _: u64| {};
    let mut ctl = Control::new(&mut progress);
    ctl.check_invariants = true;
    run_built(sc, eng, None, &mut ctl, std::time::Instant::now())
        .expect("the run ends")
        .0
}

/// Everything a run reports.
fn printed(r: &RunResult) -> String {
    serde_json::to_string(r).unwrap()
}

fn same_either_way(text: &str) -> RunResult {
    let sc = Scenario::from_toml(text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    let lazy = run(&sc, false);
    let eager = run(&sc, true);
    assert_eq!(printed(&lazy), printed(&eager));
    lazy
}

#[test]
fn compaction_over_the_whole_zone_sees_the_same_memory() {
    // Two readers fill the machine, one file is deleted, then compact_memory: both
    // scanners cross every pageblock of the zone, from its two ends.
    let text = include_str!("../../../python/vmsim/scenarios/compact-large-folios.toml");
    let r = same_either_way(&text.replace("duration = \"60s\"", "duration = \"8s\""));
    assert!(
        r.vmstat["compact_migrate_scanned"] > 100_000,
        "{:?}",
        r.vmstat
    );
    assert!(r.vmstat["compact_free_scanned"] > 100_000, "{:?}", r.vmstat);
}

#[test]
fn the_default_scenario_and_a_head_inserting_boot_are_the_same() {
    let text = "duration = \"2s\"\n[machine]\nmemory = \"2GiB\"\ncpus = 2\n\
                [[task]]\nname = \"t\"\ncount = 4\n\
                program = [{ op = \"touch\", size = \"300MiB\" }, { op = \"alloc\", order = 9, count = 20, type = \"unmovable\" }, { op = \"unmap\", size = \"300MiB\" }]\n";
    let r = same_either_way(text);
    assert_eq!(r.summary.alloc_failures, 0);
    // Seed-era kernels free boot memory to the lists' heads: the untouched blocks are
    // then taken from the top of the zone down.
    same_either_way(&text.replace("[[task]]", "[kernel]\nboot_free_to_tail = false\n[[task]]"));
}

#[test]
fn blocks_written_from_either_end_keep_their_place_in_the_list() {
    // compact_memory on a mostly untouched machine: the migrate scanner writes blocks
    // from the zone's bottom, the free scanner from its top; then whole blocks are taken
    // off the list, whose order says which pfns they get (the pageblock map shows it).
    let text = "duration = \"3s\"\n[machine]\nmemory = \"2GiB\"\ncpus = 2\n\
                [[task]]\nname = \"t\"\nprogram = [\
                { op = \"touch\", size = \"200MiB\" },\
                { op = \"alloc\", order = 0, count = 20000, type = \"unmovable\" },\
                { op = \"unmap\", size = \"100MiB\" },\
                { op = \"compact_memory\" },\
                { op = \"alloc\", order = 10, count = 200, type = \"movable\" },\
                { op = \"alloc\", order = 3, count = 3000, type = \"reclaimable\" }]\n";
    let r = same_either_way(text);
    assert!(r.vmstat["compact_free_scanned"] > 0 && r.vmstat["compact_migrate_scanned"] > 0);
    assert_eq!(r.summary.alloc_failures, 0);
}
