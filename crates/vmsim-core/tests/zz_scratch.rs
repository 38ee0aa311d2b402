use std::time::Instant;
#[test]
fn scratch() {
    let sc = vmsim_core::Scenario::from_toml(vmsim_core::config::DEFAULT_SCENARIO).unwrap();
    let t0 = Instant::now();
    let r = vmsim_core::run(&sc, &mut |_, _| {});
    eprintln!("wall {:?}", t0.elapsed());
    eprintln!("{}", serde_json::to_string_pretty(&r.summary).unwrap());
    eprintln!("{}", serde_json::to_string_pretty(&r.tasks).unwrap());
    eprintln!("{}", serde_json::to_string_pretty(&r.zones).unwrap());
    eprintln!("{}", serde_json::to_string(&r).unwrap().len());
}
