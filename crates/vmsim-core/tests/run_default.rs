use std::time::Instant;
#[test]
#[ignore]
fn time_default() {
    let sc = vmsim_core::Scenario::from_toml(vmsim_core::config::DEFAULT_SCENARIO).unwrap();
    let t0 = Instant::now();
    let r = vmsim_core::run(&sc, &mut |_, _| {});
    eprintln!("wall {:?}", t0.elapsed());
    eprintln!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
    eprintln!("{}", serde_json::to_string_pretty(&r.tasks).unwrap());
    eprintln!("{}", r.proc["buddyinfo"]);
    eprintln!("{}", r.proc["pagetypeinfo"]);
    eprintln!(
        "{}",
        serde_json::to_string_pretty(&r.fragmentation).unwrap()
    );
}
