//! The largest machine vmsim simulates, 16 TiB: 2^32 frames, so every frame number fits
//! a page's 32-bit links, the last zone ends at 2^32 and the list end `NIL` (u32::MAX)
//! is the last frame, which must always be reserved memmap. Run in the test profile,
//! every pfn computation past the end is checked for overflow and every stored link by
//! `pfn32`'s debug assertion.

use vmsim_core::config::Scenario;
use vmsim_core::mm::page::{pg, NIL};
use vmsim_core::mm::Mm;
use vmsim_core::sim::{run_controlled, Control};

fn machine(nodes: u32) -> Scenario {
    let text = format!("duration = \"100ms\"\n[machine]\nmemory = \"16TiB\"\nnodes = {nodes}\n");
    Scenario::from_toml(&text).unwrap_or_else(|e| panic!("{e}"))
}

/// Boot: 2^32 frames, the last zone ends at 2^32, the last frame is reserved and
/// stays so: it is never a free block, a list member or a mapped page.
#[test]
fn the_last_frame_of_16_tib_is_reserved_memmap() {
    for nodes in [1, 4] {
        let s = machine(nodes);
        let mm = Mm::boot(&s.machine, &s.kernel, &s.cost);
        assert_eq!(mm.map.len() as u64, 1 << 32, "{nodes} node(s)");
        let last = mm.zones.iter().map(|z| z.zone_end_pfn()).max().unwrap();
        assert_eq!(last, 1 << 32, "{nodes} node(s)");
        assert_eq!(NIL, (1 << 32) - 1);
        assert!(mm.frame(NIL).test(pg::RESERVED), "{nodes} node(s)");
    }
}

/// The default workload on 16 TiB for 100 ms, with its pageblock map (a walk of every
/// pageblock up to the last): it runs, allocates, and leaves the last frame reserved.
#[test]
fn a_16_tib_machine_runs_the_default_workload() {
    let mut sc = Scenario::from_toml(vmsim_core::config::DEFAULT_SCENARIO).unwrap();
    sc.machine.memory = machine(1).machine.memory;
    sc.duration = machine(1).duration;
    let (r, _) = run_controlled(&sc, None, &mut Control::new(&mut |_, _| {}))
        .unwrap_or_else(|e| panic!("{e}"));
    assert!(
        r.vmstat["pgalloc_normal"] > 10_000,
        "{}",
        r.vmstat["pgalloc_normal"]
    );
    let blocks: usize = r.pageblocks.iter().map(|m| m.migratetype.len()).sum();
    assert_eq!(
        blocks as u64,
        (1u64 << 32) >> 9,
        "every pageblock is in the map"
    );
}
