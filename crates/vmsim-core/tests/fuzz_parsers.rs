//! Property tests over every parser of user input: the scenario TOML (`Scenario::from_toml`,
//! which also validates), sizes and durations (`units`) and event selectors
//! (`EventFilter::parse`), and the replayed traces (kmem event lines, libCacheSim's
//! trace formats as bytes). Whatever the text, each returns a value or an error whose message
//! is one line — never a panic. `make fuzz` runs them with `PROPTEST_CASES=20000`.

use proptest::prelude::*;
use vmsim_core::config::DEFAULT_SCENARIO;
use vmsim_core::replay::kmem::{parse_line, Line};
use vmsim_core::replay::trace_access::{for_each_access, Format};
use vmsim_core::trace::EventFilter;
use vmsim_core::units::{parse_duration, parse_size};
use vmsim_core::Scenario;

/// Longest accepted error message [characters], as the Python fuzzer's (an unknown key's
/// message lists every key of its table).
const MAX_MESSAGE: usize = 2000;

fn one_line(msg: &str) -> Result<(), TestCaseError> {
    prop_assert!(!msg.contains('\n'), "message of several lines: {msg:?}");
    prop_assert!(
        msg.chars().count() <= MAX_MESSAGE,
        "message of {} chars",
        msg.len()
    );
    prop_assert!(
        !msg.contains("untagged enum"),
        "message names serde internals: {msg}"
    );
    Ok(())
}

/// A line of the default scenario with one key's value replaced by hostile text.
fn mutated_scenario() -> impl Strategy<Value = String> {
    let lines: Vec<&'static str> = DEFAULT_SCENARIO.lines().collect();
    let n = lines.len();
    let values = prop_oneof![
        Just("18446744073709551615".to_string()),
        Just("-1".to_string()),
        Just("9223372036854775807".to_string()),
        Just("\"16EiB\"".to_string()),
        Just("\"99999999999999999999TiB\"".to_string()),
        Just("\"1e308s\"".to_string()),
        Just("nan".to_string()),
        Just("inf".to_string()),
        Just("true".to_string()),
        Just("[]".to_string()),
        Just("{}".to_string()),
        Just("\"\"".to_string()),
        any::<i64>().prop_map(|v| v.to_string()),
        "\"[0-9]{0,25}[a-zA-Zµ]{0,4}\"",
    ];
    (0..n, values, any::<bool>()).prop_map(move |(i, v, drop)| {
        let mut out = String::new();
        for (j, line) in lines.iter().enumerate() {
            if j == i {
                if drop {
                    continue;
                }
                match line.split_once('=') {
                    Some((k, _)) if !line.trim_start().starts_with('#') => {
                        out.push_str(&format!("{k}= {v}"));
                    }
                    _ => out.push_str(line),
                }
            } else {
                out.push_str(line);
            }
            out.push('\n');
        }
        out
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(512)
    ))]

    /// Any text: a scenario or a one-line error.
    #[test]
    fn scenario_from_any_text(text in "(?s).{0,200}") {
        if let Err(e) = Scenario::from_toml(&text) {
            one_line(&e.to_string())?;
        }
    }

    /// The default scenario with one value replaced or one line dropped.
    #[test]
    fn scenario_with_one_hostile_value(text in mutated_scenario()) {
        if let Err(e) = Scenario::from_toml(&text) {
            one_line(&e.to_string())?;
        }
    }

    /// Sizes and durations: a number or a one-line error, never an overflow panic.
    #[test]
    fn sizes_and_durations(text in "[-+ ]?[0-9._]{0,30}(e[0-9]{1,3})? ?(|B|K|KiB|M|MiB|G|GiB|T|TiB|P|kB|MB|GB|ns|us|µs|ms|s|min|h|[a-z]{1,3})") {
        if let Err(e) = parse_size(&text) {
            one_line(&e)?;
        }
        if let Err(e) = parse_duration(&text) {
            one_line(&e)?;
        }
    }

    /// Event selectors as written to set_event.
    #[test]
    fn event_selectors(list in proptest::collection::vec("!?[a-z_]{0,12}(:[a-z_*]{0,16})?", 0..4)) {
        if let Err(e) = EventFilter::parse(list.iter().map(|s| s.as_str())) {
            one_line(&e.to_string())?;
        }
    }

    /// kmem event lines with hostile field values: an event, ignored, or malformed with a
    /// one-line reason.
    #[test]
    fn kmem_lines(
        name in "(kmem:)?mm_page_(alloc|free|free_batched|alloc_extfrag|other)",
        fields in "( (page|pfn|order|migratetype|gfp_flags|fragmenting)=[-0-9a-zA-Z_|x()]{0,24}){0,6}",
        ts in "[0-9.]{0,25}",
    ) {
        if let Line::Malformed(why) = parse_line(&format!(" a-1 [000] ..... {ts}: {name}:{fields}")) {
            one_line(&why)?;
        }
    }

    /// Any bytes in any access-trace format: requests, counted bad lines or a truncation
    /// message, never a panic.
    #[test]
    fn access_traces_from_any_bytes(data in proptest::collection::vec(any::<u8>(), 0..400), which in 0usize..4) {
        let fmt = [
            Format::Txt,
            Format::OracleGeneral,
            Format::Vscsi,
            Format::parse("csv", 2, b',', true).unwrap(),
        ][which].clone();
        let mut r: &[u8] = &data;
        let bad = for_each_access(&mut r, &fmt, |_| true);
        if let Some(t) = bad.truncated {
            one_line(&t)?;
        }
    }
}
