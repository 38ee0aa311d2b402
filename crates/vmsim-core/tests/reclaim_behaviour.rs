use vmsim_core::config::Scenario;

#[test]
fn probe() {
    let text = r#"
name = "swap-roundtrip"
duration = "5s"
[sampling]
interval = "5s"
[machine]
memory = "256MiB"
cpus = 1
swap = "512MiB"
[disk]
latency = 20000
read_bandwidth = 2000000000
write_bandwidth = 1000000000
[[task]]
name = "hog"
program = [
  { op = "touch", size = "320MiB" },
  { op = "sleep", time = "20ms" },
  { op = "touch", size = "320MiB" },
]
"#;
    let sc = Scenario::from_toml(text).unwrap();
    let t0 = std::time::Instant::now();
    let r = vmsim_core::run(&sc, &mut |_, _| {});
    eprintln!("wall {:?}", t0.elapsed());
    eprintln!("{:?}", r.summary);
    for (k, v) in &r.vmstat_delta {
        eprintln!("{k} {v}");
    }
}
